package forecast_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
)

func d(s string) pipeline.Day {
	day, err := pipeline.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return day
}

func days(ss ...string) []pipeline.Day {
	out := make([]pipeline.Day, len(ss))
	for i, s := range ss {
		out[i] = d(s)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// checked returns an allocator that fails the test when anything allocated
// through it is still held at the end.
func checked(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// row is one decoded forecast_malo row.
type row struct {
	portfolio, malo, area, kind, meter, source string
	day                                        arrow.Date32
	qh                                         int
	ts                                         int64
	mw                                         float64
}

// location is the decoded rows of one market location.
type location struct {
	area, kind, meter, source string
	mw                        []float64
}

// sink collects what a generator emits, decoding each record at once since
// emit must not keep it.
type sink struct {
	t       *testing.T
	rows    []row
	batches []int // rows per batch
	err     error // returned by emit when set
}

func (s *sink) emit(rec arrow.RecordBatch) error {
	s.t.Helper()
	if !rec.Schema().Equal(pipeline.ForecastMaloSchema) {
		s.t.Fatalf("schema %s", rec.Schema())
	}
	s.batches = append(s.batches, int(rec.NumRows()))
	s.rows = append(s.rows, decode(s.t, rec)...)
	return s.err
}

func str(t *testing.T, col arrow.Array, i int) string {
	t.Helper()
	dict, ok := col.(*array.Dictionary)
	if !ok {
		t.Fatalf("column %s is not a dictionary", col.DataType())
	}
	return dict.Dictionary().(*array.String).Value(dict.GetValueIndex(i))
}

func decode(t *testing.T, rec arrow.RecordBatch) []row {
	t.Helper()
	out := make([]row, rec.NumRows())
	for i := range out {
		out[i] = row{
			portfolio: str(t, rec.Column(pipeline.FMPortfolio), i),
			day:       rec.Column(pipeline.FMDay).(*array.Date32).Value(i),
			malo:      str(t, rec.Column(pipeline.FMMalo), i),
			area:      str(t, rec.Column(pipeline.FMControlArea), i),
			kind:      str(t, rec.Column(pipeline.FMKind), i),
			meter:     str(t, rec.Column(pipeline.FMMeteringType), i),
			source:    str(t, rec.Column(pipeline.FMSource), i),
			qh:        int(rec.Column(pipeline.FMQH).(*array.Int16).Value(i)),
			ts:        int64(rec.Column(pipeline.FMTS).(*array.Timestamp).Value(i)),
			mw:        rec.Column(pipeline.FMPowerMW).(*array.Float64).Value(i),
		}
	}
	return out
}

// byMalo groups the rows per location and checks what every row must hold:
// the portfolio, the day, consecutive quarter-hours with their UTC starts,
// and one set of attributes per location.
func (s *sink) byMalo(portfolio string, day pipeline.Day) map[string]*location {
	s.t.Helper()
	ts := day.QuarterStartsMicros()
	out := map[string]*location{}
	for _, r := range s.rows {
		l := out[r.malo]
		if l == nil {
			l = &location{area: r.area, kind: r.kind, meter: r.meter, source: r.source}
			out[r.malo] = l
		}
		if r.portfolio != portfolio || r.day != day.Date32() || r.qh != len(l.mw) || r.qh >= len(ts) || r.ts != ts[r.qh] ||
			r.area != l.area || r.kind != l.kind || r.meter != l.meter || r.source != l.source {
			s.t.Fatalf("row %+v: want portfolio %s day %s qh %d of %d, attributes %+v", r, portfolio, day, len(l.mw), len(ts), *l)
		}
		l.mw = append(l.mw, r.mw)
	}
	for m, l := range out {
		if len(l.mw) != day.Intervals() {
			s.t.Fatalf("malo %s has %d rows, want %d", m, len(l.mw), day.Intervals())
		}
	}
	return out
}

// clockSlot is the local clock quarter-hour (0..95) of quarter-hour q of day,
// computed independently of the package.
func clockSlot(day pipeline.Day, q int) int {
	t := day.Start().Add(time.Duration(q) * 15 * time.Minute).In(pipeline.Berlin)
	return t.Hour()*4 + t.Minute()/15
}

// meteredByClock builds a metered day whose value at each quarter-hour is
// f(local clock slot, occurrence) in kWh, occurrence counting 0, 1 for the
// repeated hour of the fall-back day.
func meteredByClock(malo string, day pipeline.Day, f func(slot, occ int) float64) pipeline.MeteredEntry {
	n := day.Intervals()
	vals := make([]float64, n)
	seen := map[int]int{}
	for q := range vals {
		s := clockSlot(day, q)
		vals[q] = f(s, seen[s])
		seen[s]++
	}
	return pipeline.MeteredEntry{Day: day, Malo: malo, Unit: pipeline.KWH, Values: vals}
}

func newGen(t *testing.T, cfg forecast.Config, day pipeline.Day, dso []pipeline.ProfileEntry) (*forecast.Generator, *sink) {
	t.Helper()
	s := &sink{t: t}
	g, err := forecast.NewGenerator(cfg, "p1", day, dso, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Release)
	return g, s
}
