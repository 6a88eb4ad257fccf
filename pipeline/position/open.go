package position

import (
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// openKey is one (portfolio, control area) block of the open position.
type openKey struct {
	portfolio string
	area      int
}

// openBlock holds the quarter-hour values of one block.
type openBlock struct {
	net, bought, sold []float64
}

// Open returns the OpenPositionSchema record of the positions (a
// PositionSchema record, columns found by name) less the trades. The caller
// owns the record; positions is not released. Trades must be for the day of
// the positions, with one value per quarter-hour of that day.
func Open(alloc memory.Allocator, positions arrow.RecordBatch, trades []pipeline.TradeSet) (arrow.RecordBatch, error) {
	blocks := map[openKey]*openBlock{}
	var day pipeline.Day
	n := 0
	block := func(p string, area int) *openBlock {
		k := openKey{p, area}
		b := blocks[k]
		if b == nil {
			b = &openBlock{net: make([]float64, n), bought: make([]float64, n), sold: make([]float64, n)}
			blocks[k] = b
		}
		return b
	}

	if positions != nil && positions.NumRows() > 0 {
		var err error
		if day, err = positionsDay(positions); err != nil {
			return nil, err
		}
		n = day.Intervals()
		cols := map[string]arrow.Array{}
		for _, name := range []string{"portfolio", "control_area", "qh_index", "net_mw"} {
			c, err := column(positions, name)
			if err != nil {
				return nil, err
			}
			cols[name] = c
		}
		portfolio, area := stringAt(cols["portfolio"]), stringAt(cols["control_area"])
		qh, ok := intAt(cols["qh_index"])
		netCol, ok2 := cols["net_mw"].(*array.Float64)
		if !ok || !ok2 {
			return nil, pipeline.Errorf(pipeline.Invalid, "positions: qh_index must be an integer and net_mw float64")
		}
		for i := range int(positions.NumRows()) {
			ai := areaIndex(area(i))
			if ai < 0 || portfolio(i) == "" {
				return nil, pipeline.Errorf(pipeline.Invalid, "positions row %d: portfolio %q, control area %q", i, portfolio(i), area(i))
			}
			q := qh(i)
			if q < 0 || q >= n {
				return nil, pipeline.Errorf(pipeline.Invalid, "positions row %d: qh_index %d outside the %d quarter-hours of %s", i, q, n, day)
			}
			block(portfolio(i), int(ai)).net[q] += netCol.Value(i)
		}
	}

	seen := map[string]bool{}
	for _, set := range trades {
		if set.Portfolio == "" {
			return nil, pipeline.Errorf(pipeline.Invalid, "trade set without portfolio")
		}
		if seen[set.Portfolio] {
			return nil, pipeline.Errorf(pipeline.Conflict, "two trade sets for portfolio %s", set.Portfolio)
		}
		seen[set.Portfolio] = true
		if day.IsZero() {
			if set.Day.IsZero() {
				return nil, pipeline.Errorf(pipeline.Invalid, "trade set of %s has no delivery day", set.Portfolio)
			}
			day, n = set.Day, set.Day.Intervals()
		} else if !set.Day.IsZero() && set.Day != day {
			return nil, pipeline.Errorf(pipeline.Invalid, "trade set of %s is for %s, the positions for %s", set.Portfolio, set.Day, day)
		}
		for i, t := range set.Trades {
			ai := areaIndex(string(t.ControlArea))
			if ai < 0 {
				return nil, pipeline.Errorf(pipeline.Invalid, "trade %d of %s: control area %q is not known", i, set.Portfolio, t.ControlArea)
			}
			if !unitKnown(t.Unit) {
				return nil, pipeline.Errorf(pipeline.Invalid, "trade %d of %s: unit %q is not known", i, set.Portfolio, t.Unit)
			}
			if len(t.Values) != n {
				return nil, pipeline.Errorf(pipeline.Invalid, "trade %d of %s: %d values, %s has %d quarter-hours", i, set.Portfolio, len(t.Values), day, n)
			}
			b := block(set.Portfolio, int(ai))
			var dst []float64
			switch t.Direction {
			case pipeline.Buy:
				dst = b.bought
			case pipeline.Sell:
				dst = b.sold
			default:
				return nil, pipeline.Errorf(pipeline.Invalid, "trade %d of %s: direction %q, want buy or sell", i, set.Portfolio, t.Direction)
			}
			for q, v := range t.Values {
				// The direction carries the sign; a negative quantity would
				// silently turn a buy into a sell.
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, pipeline.Errorf(pipeline.Invalid, "trade %d of %s: value %v at quarter-hour %d, want a non-negative quantity", i, set.Portfolio, v, q)
				}
				dst[q] += t.Unit.ToMW(v)
			}
		}
	}

	keys := make([]openKey, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y openKey) int {
		if x.portfolio != y.portfolio {
			if x.portfolio < y.portfolio {
				return -1
			}
			return 1
		}
		return x.area - y.area
	})
	out := newOutColumns(alloc, 4, false)
	defer out.release()
	var ts []int64
	if n > 0 {
		ts = day.QuarterStartsMicros()
	}
	open := make([]float64, n)
	for _, k := range keys {
		b := blocks[k]
		for q := range n {
			open[q] = b.net[q] - b.bought[q] + b.sold[q]
		}
		if err := out.appendSeries(k.portfolio, pipeline.ControlAreas[k.area], day, ts, "", b.net, b.bought, b.sold, open); err != nil {
			return nil, err
		}
	}
	return out.record(pipeline.OpenPositionSchema), nil
}

// positionsDay is the one delivery day of a positions record.
func positionsDay(rec arrow.RecordBatch) (pipeline.Day, error) {
	c, err := column(rec, "delivery_day")
	if err != nil {
		return pipeline.Day{}, err
	}
	d, ok := c.(*array.Date32)
	if !ok {
		return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "positions: delivery_day has type %s, want date32", c.DataType())
	}
	first := d.Value(0)
	for i := 1; i < d.Len(); i++ {
		if d.Value(i) != first {
			return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "positions hold more than one delivery day")
		}
	}
	return dayOf(first), nil
}

func dayOf(d arrow.Date32) pipeline.Day {
	t := d.ToTime()
	return pipeline.NewDay(t.Year(), t.Month(), t.Day())
}

// PositionRows converts a PositionSchema record to rows, for the read models.
// Columns are found by name; a missing column leaves its field zero.
func PositionRows(rec arrow.RecordBatch) []pipeline.PositionRow {
	if rec == nil {
		return nil
	}
	r := newRowReader(rec)
	cons, prod, net := r.float("consumption_mw"), r.float("production_mw"), r.float("net_mw")
	source := r.str("source")
	out := make([]pipeline.PositionRow, rec.NumRows())
	for i := range out {
		out[i] = pipeline.PositionRow{
			Portfolio: r.portfolio(i), ControlArea: pipeline.ControlArea(r.area(i)), QH: r.qh(i), TS: r.ts(i),
			ConsumptionMW: cons(i), ProductionMW: prod(i), NetMW: net(i), Source: source(i),
		}
	}
	return out
}

// OpenRows converts an OpenPositionSchema record to rows, for the read models
// and the schedules. Columns are found by name; a missing column leaves its
// field zero.
func OpenRows(rec arrow.RecordBatch) []pipeline.OpenPositionRow {
	if rec == nil {
		return nil
	}
	r := newRowReader(rec)
	net, bought, sold, open := r.float("net_mw"), r.float("bought_mw"), r.float("sold_mw"), r.float("open_mw")
	out := make([]pipeline.OpenPositionRow, rec.NumRows())
	for i := range out {
		out[i] = pipeline.OpenPositionRow{
			Portfolio: r.portfolio(i), ControlArea: pipeline.ControlArea(r.area(i)), QH: r.qh(i), TS: r.ts(i),
			NetMW: net(i), BoughtMW: bought(i), SoldMW: sold(i), OpenMW: open(i),
		}
	}
	return out
}

// rowReader reads the key columns of a position record by name.
type rowReader struct {
	rec             arrow.RecordBatch
	portfolio, area func(int) string
	qh              func(int) int
	ts              func(int) time.Time
}

func newRowReader(rec arrow.RecordBatch) *rowReader {
	r := &rowReader{rec: rec}
	r.portfolio, r.area = r.str("portfolio"), r.str("control_area")
	r.qh = func(int) int { return 0 }
	if c, err := column(rec, "qh_index"); err == nil {
		if f, ok := intAt(c); ok {
			r.qh = f
		}
	}
	r.ts = func(int) time.Time { return time.Time{} }
	if c, err := column(rec, "ts_utc"); err == nil {
		if t, ok := c.(*array.Timestamp); ok {
			unit := t.DataType().(*arrow.TimestampType).Unit
			r.ts = func(i int) time.Time { return t.Value(i).ToTime(unit).UTC() }
		}
	}
	return r
}

func (r *rowReader) str(name string) func(int) string {
	c, err := column(r.rec, name)
	if err != nil {
		return func(int) string { return "" }
	}
	return stringAt(c)
}

func (r *rowReader) float(name string) func(int) float64 {
	if c, err := column(r.rec, name); err == nil {
		if f, ok := c.(*array.Float64); ok {
			return f.Value
		}
	}
	return func(int) float64 { return 0 }
}
