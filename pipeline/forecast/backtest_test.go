package forecast_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
)

// synthShape is the true mean load in MW of a synthetic RLM customer at a
// local clock slot: a base load of 2 MW plus a daytime bump from 06:00 to
// 20:00 of 3 MW on working days, 1.5 MW on Saturdays and 0.3 MW on Sundays
// and holidays.
func synthShape(c forecast.DayClass, slot int) float64 {
	h := float64(slot) / 4
	bump := 0.0
	if h >= 6 && h < 20 {
		bump = math.Sin(math.Pi * (h - 6) / 14)
	}
	switch c {
	case forecast.Saturday:
		return 2 + 1.5*bump
	case forecast.SundayHoliday:
		return 2 + 0.3*bump
	}
	return 2 + 3*bump
}

// Noise of the synthetic load: each day is scaled by 1 + N(0, dayNoise) and
// each quarter-hour by 1 + N(0, qhNoise).
const (
	dayNoise = 0.03
	qhNoise  = 0.05
)

// synthHistory builds kWh entries for malo from first to last (inclusive),
// scaled by scale, laid out by local clock time so that DST days have 92 or
// 100 values. outage days carry a tenth of the load.
func synthHistory(rng *rand.Rand, malo string, first, last pipeline.Day, scale float64, outage map[pipeline.Day]bool) []pipeline.MeteredEntry {
	var out []pipeline.MeteredEntry
	for day := first; !last.Before(day); day = day.AddDays(1) {
		c := forecast.ClassOf(day, "")
		f := 1 + dayNoise*rng.NormFloat64()
		if outage[day] {
			f *= 0.1
		}
		e := meteredByClock(malo, day, func(s, _ int) float64 {
			mw := scale * synthShape(c, s) * f * (1 + qhNoise*rng.NormFloat64())
			return mw * 1000 / 4
		})
		out = append(out, e)
	}
	return out
}

// TestBacktest scores the history method on 12 weeks of synthetic RLM load of
// three customers around Easter 2026 and the spring-forward day: the last four
// weeks are forecast from the eight weeks before each day.
//
// The bound on the MAPE follows from the noise model. A perfect forecast of
// the mean still misses the actual by the noise, sigma = sqrt(0.03^2 + 0.05^2)
// = 5.8 %, whose mean absolute value is 0.80 sigma = 4.7 %. The trimmed mean
// of about six days adds its own error of roughly sigma / sqrt(6) in
// quadrature, which gives about 5.0 %. The test allows 6 %; a method that
// picks wrong days (a Sunday for a Monday) or misaligns the DST day lands far
// above it, as the previous-day baseline shows.
func TestBacktest(t *testing.T) {
	rng := rand.New(rand.NewPCG(20260329, 7))
	first, last := d("2026-02-01"), d("2026-04-26")
	// A plant outage on Wednesday 4.3. lies in the history of every
	// Wednesday that is scored.
	outage := map[pipeline.Day]bool{d("2026-03-04"): true}
	var history []pipeline.MeteredEntry
	for i, scale := range []float64{1, 2.5, 0.7} {
		history = append(history, synthHistory(rng, maloName(i), first, last, scale, outage)...)
	}
	var scored []pipeline.Day
	for day := d("2026-03-30"); !last.Before(day); day = day.AddDays(1) {
		scored = append(scored, day)
	}
	res, err := forecast.Backtest(forecast.Config{}, history, scored, "")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("backtest:\n%s", out)

	if res.Days != 3*28 || res.Skipped != 0 {
		t.Fatalf("scored %d days, skipped %d; want 84 and 0", res.Days, res.Skipped)
	}
	if res.MAPE > 6 {
		t.Errorf("MAPE %.2f %% above the 6 %% the noise allows", res.MAPE)
	}
	if res.PreviousDayMAPE <= res.MAPE {
		t.Errorf("previous-day baseline %.2f %% is not worse than the method's %.2f %%", res.PreviousDayMAPE, res.MAPE)
	}
	if len(res.ByClass) != 7 {
		t.Errorf("classes %v", res.ByClass)
	}
	for c, s := range res.ByClass {
		if s.MAPE > 6.5 || s.PreviousDayMAPE <= s.MAPE {
			t.Errorf("%s: MAPE %.2f %%, previous day %.2f %%", c, s.MAPE, s.PreviousDayMAPE)
		}
	}
	// The outage lowers the plain mean of the Wednesdays by about 1/8 of
	// 90 %, some 11 % of the load; the trimmed mean leaves it out. On the
	// other classes the two are within a few tenths of a percent.
	wed := res.ByClass[forecast.Wednesday]
	if wed.MeanMAPE < 1.5*wed.MAPE {
		t.Errorf("Wednesdays: trimmed %.2f %%, plain mean %.2f %%: the outage should hurt the plain mean", wed.MAPE, wed.MeanMAPE)
	}
	// Sundays and holidays after Easter use the spring-forward day in their
	// history; a misaligned day would show here.
	if sun := res.ByClass[forecast.SundayHoliday]; sun.Days != 3*6 {
		t.Errorf("Sun/holiday days %d, want 18 (4 Sundays, Good Friday, Easter Monday)", sun.Days)
	}
}

func TestBacktestSkips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	history := synthHistory(rng, "m", d("2026-10-01"), d("2026-11-24"), 1, nil)
	res, err := forecast.Backtest(forecast.Config{MinHistoryDays: 8}, history, days("2026-11-24", "2026-11-25", "2026-10-05"), "")
	if err != nil {
		t.Fatal(err)
	}
	// 24.11.: 7 Tuesdays from 6.10. on, fewer than 8; 25.11.: no actual;
	// 5.10.: previous day only, no history.
	if res.Days != 0 || res.Skipped != 3 {
		t.Fatalf("days %d skipped %d", res.Days, res.Skipped)
	}
	dup := append(history, history[0])
	if _, err := forecast.Backtest(forecast.Config{}, dup, days("2026-11-24"), ""); pipeline.KindOf(err) != pipeline.Invalid {
		t.Fatalf("duplicate entry: err = %v", err)
	}
}
