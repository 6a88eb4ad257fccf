package forecast

import (
	"math"
	"slices"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// Score is the error of a forecast over a set of quarter-hours.
type Score struct {
	// MAPE is the mean absolute percentage error of the history method
	// (trimmed mean of the similar days), in percent.
	MAPE float64 `json:"mape_pct"`
	// MeanMAPE is the same for the plain mean of the same similar days, to
	// show what trimming buys.
	MeanMAPE float64 `json:"mean_mape_pct"`
	// PreviousDayMAPE is the naive baseline: the previous day's actual
	// values, aligned by local clock time.
	PreviousDayMAPE float64 `json:"previous_day_mape_pct"`
	Days            int     `json:"days"`
	Quarters        int     `json:"quarters"` // quarter-hours with actual > 0
}

// BacktestResult is the outcome of Backtest, overall and per day class.
type BacktestResult struct {
	Score
	ByClass map[DayClass]Score `json:"by_class"`
	// Skipped counts (location, day) pairs that could not be scored: no
	// actual values, no previous day, or fewer than MinHistoryDays usable
	// similar days.
	Skipped int `json:"skipped"`
}

// scoreSums accumulates absolute percentage errors.
type scoreSums struct {
	method, mean, prev float64
	days, quarters     int
}

func (s *scoreSums) score() Score {
	if s.quarters == 0 {
		return Score{Days: s.days}
	}
	q := float64(s.quarters)
	return Score{MAPE: 100 * s.method / q, MeanMAPE: 100 * s.mean / q, PreviousDayMAPE: 100 * s.prev / q, Days: s.days, Quarters: s.quarters}
}

// Backtest measures the history method on series with known actuals. For each
// market location in history and each day in days it forecasts the day from
// the location's entries on the similar days before it (as Add does, with
// cfg's HistoryWeeks and MinHistoryDays and the holidays of st), compares the
// forecast with the location's actual entry of that day, and reports the MAPE
// over the quarter-hours whose actual value is above zero. Days without an
// actual entry, without the previous day's entry (the naive baseline) or with
// too little history are skipped and counted, so that the method and the
// baseline are scored on the same quarter-hours.
func Backtest(cfg Config, history []pipeline.MeteredEntry, days []pipeline.Day, st calendar.State) (BacktestResult, error) {
	cfg = cfg.withDefaults()
	byMalo := map[string]map[pipeline.Day]*pipeline.MeteredEntry{}
	var malos []string
	for i := range history {
		e := &history[i]
		m := byMalo[e.Malo]
		if m == nil {
			m = map[pipeline.Day]*pipeline.MeteredEntry{}
			byMalo[e.Malo] = m
			malos = append(malos, e.Malo)
		}
		if _, dup := m[e.Day]; dup {
			return BacktestResult{}, pipeline.Errorf(pipeline.Invalid, "backtest: two entries of malo %s on %s", e.Malo, e.Day)
		}
		m[e.Day] = e
	}
	slices.Sort(malos)

	h := newHistorian(cfg.HistoryWeeks)
	var total scoreSums
	classes := map[DayClass]*scoreSums{}
	res := BacktestResult{ByClass: map[DayClass]Score{}}
	var entries []pipeline.MeteredEntry
	actual := make([]float64, 0, 100)
	method := make([]float64, 0, 100)
	mean := make([]float64, 0, 100)
	prevProfile := make([]float64, 0, 100)
	for _, malo := range malos {
		byDay := byMalo[malo]
		for _, day := range days {
			act, prev := byDay[day], byDay[day.AddDays(-1)]
			if act == nil || prev == nil {
				res.Skipped++
				continue
			}
			entries = entries[:0]
			for _, d := range SimilarDays(day, st, cfg.HistoryWeeks) {
				if e := byDay[d]; e != nil {
					entries = append(entries, *e)
				}
			}
			n := day.Intervals()
			actual = toMW(actual[:0], act)
			k := h.collect(malo, entries, func(pipeline.Day) bool { return true })
			if len(actual) != n || k < cfg.MinHistoryDays {
				res.Skipped++
				continue
			}
			method, mean = method[:n], mean[:n]
			h.estimate(k, true)
			h.spread(day, method)
			h.estimate(k, false)
			h.spread(day, mean)
			// The previous day through the same clock layout, so that a
			// DST day on either side is aligned as the method's days are.
			if h.collect(malo, []pipeline.MeteredEntry{*prev}, func(pipeline.Day) bool { return true }) != 1 {
				res.Skipped++
				continue
			}
			h.estimate(1, false)
			prevProfile = prevProfile[:n]
			h.spread(day, prevProfile)

			cs := classes[ClassOf(day, st)]
			if cs == nil {
				cs = &scoreSums{}
				classes[ClassOf(day, st)] = cs
			}
			for _, s := range []*scoreSums{&total, cs} {
				s.days++
				for q, a := range actual {
					if a <= 0 {
						continue
					}
					s.quarters++
					s.method += math.Abs(method[q]-a) / a
					s.mean += math.Abs(mean[q]-a) / a
					s.prev += math.Abs(prevProfile[q]-a) / a
				}
			}
		}
	}
	res.Score = total.score()
	for c, s := range classes {
		res.ByClass[c] = s.score()
	}
	return res, nil
}

// toMW appends the entry's values in MW to dst; an unknown unit or a value
// that is not finite gives an empty result, which the caller skips.
func toMW(dst []float64, e *pipeline.MeteredEntry) []float64 {
	if e.Unit != pipeline.MW && e.Unit != pipeline.MWH && e.Unit != pipeline.KWH {
		return dst[:0]
	}
	for _, v := range e.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst[:0]
		}
		dst = append(dst, e.Unit.ToMW(v))
	}
	return dst
}
