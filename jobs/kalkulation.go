package jobs

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// KalkulationStore is what the kalkulation stage and the period
// calculation need of the database.
type KalkulationStore interface {
	SubmittedSchedules(ctx context.Context, day pipeline.Day) ([]pipeline.ScheduleMessage, error)
	PublishKalkulation(ctx context.Context, runID int64, day pipeline.Day, rows []kalkulation.Row) error
	KalkulationRows(ctx context.Context, portfolio string, from, to pipeline.Day) ([]kalkulation.Row, error)
	Prices(ctx context.Context, kind price.Kind, from, to time.Time) ([]price.Point, error)
}

// KalkulationArea says what the stage found for a portfolio in a control
// area: whether a schedule was submitted and how many of the market
// locations active that day delivered metered data.
type KalkulationArea struct {
	Portfolio       string               `json:"portfolio"`
	ControlArea     pipeline.ControlArea `json:"control_area"`
	Basis           kalkulation.Basis    `json:"basis"`
	Schedule        bool                 `json:"schedule"`
	ScheduleVersion int                  `json:"schedule_version,omitempty"`
	Locations       int                  `json:"locations"`
	Metered         int                  `json:"metered"`
}

// KalkulationOutputs describe a kalkulation run; Figures are the day's sums
// with the prices known when it ran, missing prices counted.
type KalkulationOutputs struct {
	Dataset lake.Snapshot       `json:"dataset"`
	Rows    int                 `json:"rows"`
	Areas   []KalkulationArea   `json:"areas"`
	Figures kalkulation.Figures `json:"figures"`
}

// areaIst accumulates the metered quantity of a portfolio's locations in one
// control area.
type areaIst struct {
	mw        []float64
	locations int
	metered   int
}

// kalkulationStage materializes what the period calculation reads for a
// past delivery day: per portfolio and control area the submitted schedule
// (the latest version the TSO did not reject) and the customers' metered
// quantity when every location active that day delivered it. It writes the
// computed quarter-hours, with the prices known at the time, to the
// kalkulation dataset for analysts.
func (r *Runner) kalkulationStage(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error) {
	day := run.Day
	if !day.Before(pipeline.DayOf(r.cfg.Now())) {
		return stageResult{}, pipeline.Errorf(pipeline.Invalid, "kalkulation of %s: the day is not over yet (the stage calculates past delivery days)", day)
	}
	ks := r.store
	sched, err := r.scheduleBalances(ctx, ks, day)
	if err != nil {
		return stageResult{}, err
	}
	n := day.Intervals()
	ts := day.QuarterStartsMicros()
	var rows []kalkulation.Row
	var out KalkulationOutputs
	for i, p := range ps {
		ist, err := r.istOf(ctx, p, day)
		if err != nil {
			return stageResult{}, fmt.Errorf("portfolio %s: %w", p.ID, err)
		}
		for _, area := range pipeline.ControlAreas {
			s, hasSchedule := sched[areaKey{p.ID, area}]
			a := ist[area]
			if !hasSchedule && a == nil {
				continue
			}
			info := KalkulationArea{Portfolio: p.ID, ControlArea: area, Basis: kalkulation.BasisFahrplan, Schedule: hasSchedule}
			if a != nil {
				info.Locations, info.Metered = a.locations, a.metered
				if a.locations > 0 && a.metered == a.locations {
					info.Basis = kalkulation.BasisIst
				}
			}
			if hasSchedule {
				info.ScheduleVersion = s.version
			}
			for q := range n {
				row := kalkulation.Row{Portfolio: p.ID, ControlArea: area, Day: day, QH: q,
					TS: time.UnixMicro(ts[q]).UTC(), Basis: info.Basis}
				if hasSchedule {
					row.BoughtMW, row.SoldMW = s.bought[q], s.sold[q]
				}
				if info.Basis == kalkulation.BasisIst {
					row.IstMW = a.mw[q]
				}
				rows = append(rows, row)
			}
			out.Areas = append(out.Areas, info)
		}
		r.progress(pipeline.StageKalkulation, int64(i+1), int64(len(ps)))
	}

	prices, err := r.pricesFor(ctx, ks, day, day)
	if err != nil {
		return stageResult{}, err
	}
	res, quarters := kalkulation.Compute(day, day, rows, prices)
	rec := kalkulation.Record(r.cfg.Alloc, quarters)
	defer rec.Release()
	if out.Dataset, err = r.writeAll(ctx, pipeline.DatasetKalkulation, run, pipeline.KalkulationSchema, rec); err != nil {
		return stageResult{}, err
	}
	out.Rows = len(rows)
	out.Figures = res.Summe
	return stageResult{outputs: out,
		apply: func(ctx context.Context) error { return ks.PublishKalkulation(ctx, run.ID, day, rows) }}, nil
}

// scheduleBalance is a submitted schedule reduced to the energy into and out
// of the portfolio's balancing group.
type scheduleBalance struct {
	version      int
	bought, sold []float64
}

// scheduleBalances reads the submitted schedules of the day. Schedules
// recorded before the quantities were kept with them are read from the
// stored document.
func (r *Runner) scheduleBalances(ctx context.Context, ks KalkulationStore, day pipeline.Day) (map[areaKey]scheduleBalance, error) {
	msgs, err := ks.SubmittedSchedules(ctx, day)
	if err != nil {
		return nil, err
	}
	out := make(map[areaKey]scheduleBalance, len(msgs))
	n := day.Intervals()
	for _, m := range msgs {
		b := scheduleBalance{version: m.Version, bought: m.BoughtMW, sold: m.SoldMW}
		if b.bought == nil || b.sold == nil {
			if b.bought, b.sold, err = r.documentBalance(ctx, m); err != nil {
				return nil, err
			}
		}
		if len(b.bought) != n || len(b.sold) != n {
			return nil, pipeline.Errorf(pipeline.Invalid, "schedule %s has %d/%d quarter-hours, expected %d for %s",
				m.FileName, len(b.bought), len(b.sold), n, day)
		}
		out[areaKey{m.PortfolioID, m.ControlArea}] = b
	}
	return out, nil
}

// documentBalance reads a schedule message from the outbox.
func (r *Runner) documentBalance(ctx context.Context, m pipeline.ScheduleMessage) ([]float64, []float64, error) {
	if r.outbox == nil {
		return nil, nil, pipeline.Errorf(pipeline.Unavailable, "schedule %s: its quantities were not recorded and no outbox is wired to read it", m.FileName)
	}
	rc, err := r.outbox.Get(ctx, m.ObjectKey)
	if err != nil {
		return nil, nil, fmt.Errorf("schedule %s: %w", m.FileName, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("schedule %s: %w", m.FileName, err)
	}
	msg, err := fahrplan.ParseSchedule(data)
	if err != nil {
		return nil, nil, fmt.Errorf("schedule %s: %w", m.FileName, err)
	}
	bought, sold := msg.Balance(m.Sender)
	return bought, sold, nil
}

// istOf sums the metered quantity of the portfolio's market locations per
// control area: consumption counts positive, production negative. A
// location counts in the area its master data place it in on the day, when
// its slice for that day is active. Its memory is that of a locationIndex
// (about 8 bytes per location) and one page of each read, whatever the
// portfolio's size: the locations and the metered day are streamed.
func (r *Runner) istOf(ctx context.Context, p pipeline.Portfolio, day pipeline.Day) (map[pipeline.ControlArea]*areaIst, error) {
	var places locationIndex
	out := map[pipeline.ControlArea]*areaIst{}
	n := day.Intervals()
	err := r.store.CurrentLocations(ctx, p.ID, 5000, func(locs []pipeline.Location) error {
		for _, l := range locs {
			s, ok := sliceOn(l.Slices, day)
			if !ok || !s.Active || s.ControlArea == "" {
				continue
			}
			places.add(l.Malo, place{area: s.ControlArea, production: s.Kind == pipeline.Production})
			a := out[s.ControlArea]
			if a == nil {
				a = &areaIst{mw: make([]float64, n)}
				out[s.ControlArea] = a
			}
			a.locations++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if places.len() == 0 {
		return out, nil
	}
	places.seal()
	err = r.store.MeteredHistory(ctx, p.ID, []pipeline.Day{day}, func(e pipeline.MeteredEntry) error {
		if e.Day != day {
			return nil
		}
		// A location is counted once even if the store handed it twice.
		pl, ok := places.take(e.Malo)
		if !ok {
			return nil
		}
		if len(e.Values) != n {
			return pipeline.Errorf(pipeline.Invalid, "metered data of %s for %s has %d values, expected %d", e.Malo, day, len(e.Values), n)
		}
		sign := 1.0
		if pl.production {
			sign = -1
		}
		a := out[pl.area]
		for i, v := range e.Values {
			a.mw[i] += sign * e.Unit.ToMW(v)
		}
		a.metered++
		return nil
	})
	return out, err
}

// place is where a location's metered quantity counts.
type place struct {
	area       pipeline.ControlArea
	production bool
}

// locationIndex maps the active locations of a day to their places in about
// 8 bytes per location: an 11-digit market location id (the only form the
// API and the inbox accept) is packed with its place into one uint64 of a
// sorted slice, and a bitset marks the locations already taken. A map of
// strings cost about 120 bytes per location and dominated the kalkulation
// stage's memory (1,164 MiB at 2,000,000 locations, issue 35). Ids of
// another form, which older data may hold, go to a map.
type locationIndex struct {
	packed []uint64 // malo << placeBits | place code, sorted after seal
	taken  []uint64 // bitset over packed
	other  map[string]place
}

// placeBits hold the place: the control area's position in
// pipeline.ControlAreas plus one, and the production flag.
const placeBits = 4

func (x *locationIndex) len() int { return len(x.packed) + len(x.other) }

func (x *locationIndex) add(malo string, p place) {
	id, ok := maloNumber(malo)
	code := uint64(slices.Index(pipeline.ControlAreas, p.area) + 1)
	if !ok || code == 0 {
		if x.other == nil {
			x.other = map[string]place{}
		}
		x.other[malo] = p
		return
	}
	if p.production {
		code |= 1 << (placeBits - 1)
	}
	x.packed = append(x.packed, id<<placeBits|code)
}

// seal sorts the index; add must not be called after it. A location added
// twice keeps its first place.
func (x *locationIndex) seal() {
	slices.Sort(x.packed)
	x.packed = slices.CompactFunc(x.packed, func(a, b uint64) bool { return a>>placeBits == b>>placeBits })
	x.taken = make([]uint64, (len(x.packed)+63)/64)
}

// take returns the place of malo the first time it is asked for, and false
// for a location that is not in the index or was taken before.
func (x *locationIndex) take(malo string) (place, bool) {
	id, ok := maloNumber(malo)
	if !ok {
		p, ok := x.other[malo]
		if ok {
			delete(x.other, malo)
		}
		return p, ok
	}
	i, found := slices.BinarySearchFunc(x.packed, id, func(v, id uint64) int { return cmp.Compare(v>>placeBits, id) })
	if !found || x.taken[i/64]&(1<<(i%64)) != 0 {
		return place{}, false
	}
	x.taken[i/64] |= 1 << (i % 64)
	v := x.packed[i]
	return place{area: pipeline.ControlAreas[v&(1<<(placeBits-1)-1)-1], production: v&(1<<(placeBits-1)) != 0}, true
}

// maloNumber is the number of an 11-digit market location id.
func maloNumber(malo string) (uint64, bool) {
	if len(malo) != 11 {
		return 0, false
	}
	var n uint64
	for i := range len(malo) {
		c := malo[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// sliceOn is the master-data slice in force on day.
func sliceOn(slices []pipeline.Slice, day pipeline.Day) (pipeline.Slice, bool) {
	for _, s := range slices {
		if !day.Before(s.ValidFrom) && (s.ValidTo == nil || day.Before(*s.ValidTo)) {
			return s, true
		}
	}
	return pipeline.Slice{}, false
}

// pricesFor loads the quarter-hour prices of the days from..to.
func (r *Runner) pricesFor(ctx context.Context, ks KalkulationStore, from, to pipeline.Day) (kalkulation.Prices, error) {
	start, end := from.Start().UTC(), to.End().UTC()
	spot, err := ks.Prices(ctx, price.Spot, start, end)
	if err != nil {
		return kalkulation.Prices{}, err
	}
	rebap, err := ks.Prices(ctx, price.ReBAP, start, end)
	if err != nil {
		return kalkulation.Prices{}, err
	}
	return kalkulation.NewPrices(spot, rebap), nil
}

// Kalkulation calculates the period from..to (at most 31 days) from what
// the kalkulation stage materialized and the prices stored now, so that a
// price imported after the stage ran counts at once. portfolio "" means all.
func (r *Runner) Kalkulation(ctx context.Context, portfolio string, from, to pipeline.Day) (kalkulation.Result, error) {
	if err := kalkulation.CheckPeriod(from, to); err != nil {
		return kalkulation.Result{}, err
	}
	ks := r.store
	rows, err := ks.KalkulationRows(ctx, portfolio, from, to)
	if err != nil {
		return kalkulation.Result{}, err
	}
	prices, err := r.pricesFor(ctx, ks, from, to)
	if err != nil {
		return kalkulation.Result{}, err
	}
	res, _ := kalkulation.Compute(from, to, rows, prices)
	return res, nil
}
