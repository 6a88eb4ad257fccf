// Package position computes the second and third steps of the day-ahead
// chain: the position of each portfolio per control area and quarter-hour
// (consumption, production and net) from the per-location forecasts, and the
// open position, which is the net position minus what the portfolio has
// already bought plus what it has already sold.
//
// # Aggregation
//
// The Aggregator reads forecast_malo record batches and sums power_mw per
// portfolio, control area, kind and quarter-hour into flat float64 slices.
// It reads the columns portfolio, control_area, kind, source, qh_index and
// power_mw by name, so a projected Parquet read is enough.
//
// A supplier's submitted forecast covers every control area that one of its
// series names, directly or through malo_mapping. For such an area the
// position is the submitted forecast as the supplier sent it (MWH converted
// to MW), with source "submitted"; the generated forecasts of that area are
// not used. Every other area with generated rows takes the sum of those rows,
// with source "generated".
//
// The malo-tagged series of a submitted forecast also appear in
// forecast_malo, as rows with source "submitted", so that analysts see them
// per location. The Aggregator never adds those rows: the submitted part of
// a position comes only from Submitted, which holds every submitted series
// exactly once. This is what keeps a malo-tagged series from being counted
// twice, and it also means that a submitted forecast that the runner did not
// pass to Positions contributes nothing instead of half of itself.
//
// # Open position
//
// Open subtracts the trades: per portfolio, control area and quarter-hour,
// bought is the sum of buy trades, sold the sum of sell trades (both
// converted to MW), and open = net - bought + sold. A positive open position
// is still to buy, a negative one to sell. An area with trades but no
// position has net 0.
package position

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Sources of a position row.
const (
	SourceSubmitted = "submitted"
	SourceGenerated = "generated"
)

const (
	nAreas = 4 // len(pipeline.ControlAreas)
	nKinds = 2 // consumption, production
)

// Aggregator sums forecast_malo rows of one delivery day. It is not safe for
// concurrent use. After Add returned an error its sums are incomplete and the
// Aggregator must be discarded.
type Aggregator struct {
	day pipeline.Day
	n   int

	portfolios []string
	ids        map[string]int32

	// sums holds the generated power per (portfolio, area, kind) slot and
	// quarter-hour at sums[slot*n+qh], slot = (p*nAreas+area)*nKinds+kind;
	// rows counts the rows that went into each slot.
	sums []float64
	rows []int64

	// submittedRows counts the rows with source "submitted" that Add read
	// and left out (see the package comment).
	submittedRows int64

	scratch [4][]int32
}

// NewAggregator returns an empty aggregator for the day.
func NewAggregator(day pipeline.Day) *Aggregator {
	return &Aggregator{day: day, n: day.Intervals(), ids: map[string]int32{}}
}

// SubmittedRows is the number of forecast_malo rows with source "submitted"
// that Add left out because Positions takes submitted series from Submitted.
func (a *Aggregator) SubmittedRows() int64 { return a.submittedRows }

func (a *Aggregator) portfolioID(name string) int32 {
	if name == "" {
		return -1
	}
	if id, ok := a.ids[name]; ok {
		return id
	}
	id := int32(len(a.portfolios))
	a.ids[name] = id
	a.portfolios = append(a.portfolios, name)
	slots := nAreas * nKinds
	a.sums = append(a.sums, make([]float64, slots*a.n)...)
	a.rows = append(a.rows, make([]int64, slots)...)
	return id
}

// sourceClass is 1 for submitted rows, 0 for generated ones and -1 for an
// unknown source.
func sourceClass(s string) int32 {
	switch s {
	case pipeline.SourceSubmitted:
		return 1
	case pipeline.SourceDSOProfile, pipeline.SourceBDEWProfile, pipeline.SourceHistory:
		return 0
	}
	return -1
}

// Add adds a ForecastMaloSchema batch (or a projection of it that has the
// columns the Aggregator reads) by turning it into a Block: one way of
// summing for records and for the aggregate stage's Parquet scan, which
// hands AddBlock its blocks directly. It does not keep rec.
func (a *Aggregator) Add(rec arrow.RecordBatch) error {
	rows := int(rec.NumRows())
	if rows == 0 {
		return nil
	}
	names := [4]string{"portfolio", "control_area", "kind", "source"}
	var runs [4]Runs
	for i, name := range names {
		arr, err := column(rec, name)
		if err != nil {
			return err
		}
		if runs[i], err = runsOf(arr, name); err != nil {
			return err
		}
	}
	qhArr, err := column(rec, "qh_index")
	if err != nil {
		return err
	}
	qhCol, ok := qhArr.(*array.Int16)
	if !ok {
		return pipeline.Errorf(pipeline.Invalid, "column qh_index has type %s, want int16", qhArr.DataType())
	}
	pwArr, err := column(rec, "power_mw")
	if err != nil {
		return err
	}
	pwCol, ok := pwArr.(*array.Float64)
	if !ok {
		return pipeline.Errorf(pipeline.Invalid, "column power_mw has type %s, want float64", pwArr.DataType())
	}
	if qhCol.NullN() > 0 || pwCol.NullN() > 0 {
		return pipeline.Errorf(pipeline.Invalid, "qh_index or power_mw has null values")
	}
	qh := make([]int32, rows)
	for i, q := range qhCol.Int16Values() {
		qh[i] = int32(q)
	}
	return a.AddBlock(Block{Rows: rows, Portfolio: runs[0], ControlArea: runs[1], Kind: runs[2], Source: runs[3],
		QH: qh, PowerMW: pwCol.Float64Values()})
}

// Submitted is a supplier's forecast for the day: its series are tagged with
// a control area, or with a market location that Forecast.MaloMapping maps
// to one; units MW or MWH (KWH is converted too).
type Submitted struct {
	Portfolio string
	Forecast  pipeline.Forecast
}

// submittedAreas sums a submitted forecast per area and kind, in MW.
type submittedAreas struct {
	covered [nAreas]bool
	mw      [nAreas][nKinds][]float64
}

func (a *Aggregator) submittedSums(s Submitted) (*submittedAreas, error) {
	f := s.Forecast
	if !f.DeliveryDay.IsZero() && f.DeliveryDay != a.day {
		return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s is for %s, not %s", s.Portfolio, f.DeliveryDay, a.day)
	}
	out := &submittedAreas{}
	for i, se := range f.Series {
		area := se.ControlArea
		if area == "" {
			mapped, ok := f.MaloMapping[se.Malo]
			if se.Malo == "" || !ok {
				return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s, series %d: malo %q has no control area in malo_mapping", s.Portfolio, i, se.Malo)
			}
			area = mapped
		}
		ai := areaIndex(string(area))
		if ai < 0 {
			return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s, series %d: control area %q is not known", s.Portfolio, i, area)
		}
		k := kindIndex(string(se.Kind))
		if k < 0 {
			return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s, series %d: kind %q is not known", s.Portfolio, i, se.Kind)
		}
		if !unitKnown(se.Unit) {
			return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s, series %d: unit %q is not known", s.Portfolio, i, se.Unit)
		}
		if len(se.Values) != a.n {
			return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast of %s, series %d: %d values, %s has %d quarter-hours", s.Portfolio, i, len(se.Values), a.day, a.n)
		}
		out.covered[ai] = true
		for kk := range nKinds {
			if out.mw[ai][kk] == nil {
				out.mw[ai][kk] = make([]float64, a.n)
			}
		}
		dst := out.mw[ai][k]
		for q, v := range se.Values {
			dst[q] += se.Unit.ToMW(v)
		}
	}
	return out, nil
}

// Positions returns the PositionSchema record of every portfolio that has
// generated rows or a submitted forecast, ordered by portfolio, control area
// (in the order of pipeline.ControlAreas) and quarter-hour. The caller owns
// the record.
func (a *Aggregator) Positions(alloc memory.Allocator, submitted []Submitted) (arrow.RecordBatch, error) {
	subs := map[string]*submittedAreas{}
	for _, s := range submitted {
		if s.Portfolio == "" {
			return nil, pipeline.Errorf(pipeline.Invalid, "submitted forecast without portfolio")
		}
		if _, dup := subs[s.Portfolio]; dup {
			return nil, pipeline.Errorf(pipeline.Conflict, "two submitted forecasts for portfolio %s", s.Portfolio)
		}
		sa, err := a.submittedSums(s)
		if err != nil {
			return nil, err
		}
		subs[s.Portfolio] = sa
	}
	names := slices.Clone(a.portfolios)
	for p := range subs {
		if _, ok := a.ids[p]; !ok {
			names = append(names, p)
		}
	}
	slices.Sort(names)

	ts := a.day.QuarterStartsMicros()
	out := newOutColumns(alloc, 3, true)
	defer out.release()
	cons, prod, net := make([]float64, a.n), make([]float64, a.n), make([]float64, a.n)
	for _, name := range names {
		sub := subs[name]
		id, hasRows := a.ids[name]
		for ai, area := range pipeline.ControlAreas {
			var c, p []float64
			source := SourceSubmitted
			switch {
			case sub != nil && sub.covered[ai]:
				c, p = sub.mw[ai][0], sub.mw[ai][1]
			case hasRows && a.rows[a.slot(id, ai, 0)]+a.rows[a.slot(id, ai, 1)] > 0:
				source = SourceGenerated
				c, p = a.series(id, ai, 0), a.series(id, ai, 1)
			default:
				continue
			}
			for q := range a.n {
				cons[q], prod[q], net[q] = c[q], p[q], c[q]-p[q]
			}
			if err := out.appendSeries(name, area, a.day, ts, source, cons, prod, net); err != nil {
				return nil, err
			}
		}
	}
	return out.record(pipeline.PositionSchema), nil
}

func (a *Aggregator) slot(id int32, area, kind int) int {
	return (int(id)*nAreas+area)*nKinds + kind
}

func (a *Aggregator) series(id int32, area, kind int) []float64 {
	s := a.slot(id, area, kind)
	return a.sums[s*a.n : (s+1)*a.n]
}

// Runs is a string column of a Block as runs of equal values: run k covers
// the rows from Ends[k-1] (0 for the first run) up to, not including,
// Ends[k], and has the value Dict[Codes[k]]. It has the layout of
// lake.StringRuns, so that the runner converts one into the other.
type Runs struct {
	Dict  []string
	Codes []int32
	Ends  []int32
}

// Block is a block of forecast_malo rows in column form, as a low-level
// Parquet scan delivers a row group: the string columns as runs, qh_index
// and power_mw as one value per row.
type Block struct {
	Rows                                 int
	Portfolio, ControlArea, Kind, Source Runs
	QH                                   []int32
	PowerMW                              []float64
}

// AddBlock adds a Block, row by row in order, so that the same rows give
// bit-identical sums however they are cut into blocks. It resolves the
// string columns once per run instead of once per row (a location's 96 rows
// share portfolio, area, kind and source). It does not keep b.
func (a *Aggregator) AddBlock(b Block) error {
	rows := b.Rows
	if len(b.QH) != rows || len(b.PowerMW) != rows {
		return pipeline.Errorf(pipeline.Invalid, "block of %d rows with %d qh_index and %d power_mw values", rows, len(b.QH), len(b.PowerMW))
	}
	if rows == 0 {
		return nil
	}
	cols := [4]*Runs{&b.Portfolio, &b.ControlArea, &b.Kind, &b.Source}
	names := [4]string{"portfolio", "control_area", "kind", "source"}
	resolvers := [4]func(string) int32{a.portfolioID, areaIndex, kindIndex, sourceClass}
	var luts [4][]int32
	for c, r := range cols {
		if len(r.Codes) != len(r.Ends) || len(r.Ends) == 0 || int(r.Ends[len(r.Ends)-1]) != rows {
			return pipeline.Errorf(pipeline.Invalid, "column %s: runs do not cover the block's %d rows", names[c], rows)
		}
		lut := grow(&a.scratch[c], len(r.Dict))
		for j, v := range r.Dict {
			lut[j] = resolvers[c](v)
		}
		luts[c] = lut
	}
	// Resolving the portfolios may have grown the sums.
	n := a.n
	sums, cnt := a.sums, a.rows
	qh, pw := b.QH, b.PowerMW
	var k [4]int // the current run of each column
	start := 0
	for start < rows {
		// The segment up to the nearest run end has one value per column.
		end := rows
		var v [4]int32
		for c, r := range cols {
			if k[c] >= len(r.Ends) {
				return pipeline.Errorf(pipeline.Invalid, "column %s: runs do not cover the block's %d rows", names[c], rows)
			}
			e := int(r.Ends[k[c]])
			if e <= start {
				return pipeline.Errorf(pipeline.Invalid, "column %s: run ends do not rise", names[c])
			}
			code := r.Codes[k[c]]
			if uint32(code) >= uint32(len(luts[c])) {
				return pipeline.Errorf(pipeline.Invalid, "column %s: code %d of a dictionary of %d", names[c], code, len(luts[c]))
			}
			v[c] = luts[c][code]
			end = min(end, e)
		}
		p, ar, kd, s := v[0], v[1], v[2], v[3]
		if p|ar|kd|s < 0 {
			return a.badBlockRow(b, start, v)
		}
		if s == 1 {
			a.submittedRows += int64(end - start)
		} else {
			slot := (int(p)*nAreas+int(ar))*nKinds + int(kd)
			dst := sums[slot*n : (slot+1)*n]
			for i := start; i < end; i++ {
				q := qh[i]
				if uint32(q) >= uint32(n) {
					return pipeline.Errorf(pipeline.Invalid, "row %d: qh_index %d outside the %d quarter-hours of %s", i, q, n, a.day)
				}
				dst[q] += pw[i]
			}
			cnt[slot] += int64(end - start)
		}
		for c, r := range cols {
			if int(r.Ends[k[c]]) == end {
				k[c]++
			}
		}
		start = end
	}
	return nil
}

// badBlockRow names the column whose value is not known.
func (a *Aggregator) badBlockRow(b Block, i int, v [4]int32) error {
	cols := [4]*Runs{&b.Portfolio, &b.ControlArea, &b.Kind, &b.Source}
	names := [4]string{"portfolio", "control_area", "kind", "source"}
	for c := range cols {
		if v[c] >= 0 {
			continue
		}
		r := cols[c]
		k := 0
		for int(r.Ends[k]) <= i {
			k++
		}
		return pipeline.Errorf(pipeline.Invalid, "row %d: %s %q is not known", i, names[c], r.Dict[r.Codes[k]])
	}
	return nil
}
