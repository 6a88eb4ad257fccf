package position_test

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/position"
)

var (
	normalDay = pipeline.NewDay(2026, time.November, 24)
	springDay = pipeline.NewDay(2026, time.March, 29)
	fallDay   = pipeline.NewDay(2026, time.October, 25)
)

// checked returns an allocator that fails the test when anything allocated
// through it is still held at the end.
func checked(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// fmRow is one forecast_malo row of a hand-made batch.
type fmRow struct {
	portfolio, malo, area, kind, source string
	qh                                  int
	mw                                  float64
}

// series expands one location's constant series into rows.
func series(portfolio, malo string, area pipeline.ControlArea, kind pipeline.Kind, source string, n int, mw func(q int) float64) []fmRow {
	out := make([]fmRow, n)
	for q := range out {
		out[q] = fmRow{portfolio, malo, string(area), string(kind), source, q, mw(q)}
	}
	return out
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// forecastBatch builds a ForecastMaloSchema record with Arrow builders, as an
// independent way of producing what the forecast stage writes.
func forecastBatch(t testing.TB, mem memory.Allocator, day pipeline.Day, rows []fmRow) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, pipeline.ForecastMaloSchema)
	defer b.Release()
	ts := day.QuarterStartsMicros()
	str := func(i int, v string) {
		if err := b.Field(i).(*array.BinaryDictionaryBuilder).AppendString(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		str(pipeline.FMPortfolio, r.portfolio)
		b.Field(pipeline.FMDay).(*array.Date32Builder).Append(day.Date32())
		str(pipeline.FMMalo, r.malo)
		str(pipeline.FMControlArea, r.area)
		str(pipeline.FMKind, r.kind)
		str(pipeline.FMMeteringType, "slp")
		str(pipeline.FMSource, r.source)
		b.Field(pipeline.FMQH).(*array.Int16Builder).Append(int16(r.qh))
		tsv := int64(0)
		if r.qh >= 0 && r.qh < len(ts) {
			tsv = ts[r.qh]
		}
		b.Field(pipeline.FMTS).(*array.TimestampBuilder).Append(arrow.Timestamp(tsv))
		b.Field(pipeline.FMPowerMW).(*array.Float64Builder).Append(r.mw)
	}
	return b.NewRecordBatch()
}

// projected builds the columns the aggregate stage reads, in another order
// and with plain (not dictionary) strings, as a projected Parquet read of a
// file written by another tool could deliver them.
func projected(t *testing.T, mem memory.Allocator, rows []fmRow) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "power_mw", Type: arrow.PrimitiveTypes.Float64},
		{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
		{Name: "source", Type: arrow.BinaryTypes.String},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "control_area", Type: dictType},
		{Name: "portfolio", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Float64Builder).Append(r.mw)
		b.Field(1).(*array.Int16Builder).Append(int16(r.qh))
		b.Field(2).(*array.StringBuilder).Append(r.source)
		b.Field(3).(*array.StringBuilder).Append(r.kind)
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString(r.area); err != nil {
			t.Fatal(err)
		}
		b.Field(5).(*array.StringBuilder).Append(r.portfolio)
	}
	return b.NewRecordBatch()
}

func concat(parts ...[]fmRow) []fmRow {
	var out []fmRow
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// posKey identifies one block of a position record in the expectations.
type posKey struct {
	portfolio string
	area      pipeline.ControlArea
}

type posWant struct {
	source           string
	consumption, prd func(q int) float64
}

func checkPositions(t *testing.T, rows []pipeline.PositionRow, day pipeline.Day, want map[posKey]posWant, order []posKey) {
	t.Helper()
	n := day.Intervals()
	if len(rows) != n*len(order) {
		t.Fatalf("%d position rows, want %d (%d blocks of %d)", len(rows), n*len(order), len(order), n)
	}
	ts := day.QuarterStartsMicros()
	for bi, k := range order {
		w := want[k]
		for q := range n {
			r := rows[bi*n+q]
			c, p := w.consumption(q), w.prd(q)
			if r.Portfolio != k.portfolio || r.ControlArea != k.area || r.QH != q || r.Source != w.source ||
				!r.TS.Equal(time.UnixMicro(ts[q])) || !near(r.ConsumptionMW, c) || !near(r.ProductionMW, p) || !near(r.NetMW, c-p) {
				t.Fatalf("row %d = %+v, want %s/%s qh %d source %s consumption %.6f production %.6f net %.6f",
					bi*n+q, r, k.portfolio, k.area, q, w.source, c, p, c-p)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestPositions(t *testing.T) {
	mwh := func(v float64) []float64 { return fill(normalDay.Intervals(), v) }
	cases := []struct {
		name      string
		day       pipeline.Day
		batches   [][]fmRow
		projected bool
		submitted []position.Submitted
		order     []posKey
		want      map[posKey]posWant
		submRows  int64
	}{
		{
			name: "generated sums per area and kind over batches",
			day:  normalDay,
			batches: [][]fmRow{
				concat(series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceDSOProfile, 96, constant(1.5)),
					series("p1", "m2", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 96, func(q int) float64 { return float64(q) })),
				concat(series("p1", "m3", pipeline.TenneT, pipeline.Production, pipeline.SourceBDEWProfile, 96, constant(0.25)),
					series("p1", "m4", pipeline.FiftyHertz, pipeline.Consumption, pipeline.SourceBDEWProfile, 96, constant(2))),
			},
			order: []posKey{{"p1", pipeline.FiftyHertz}, {"p1", pipeline.TenneT}},
			want: map[posKey]posWant{
				{"p1", pipeline.FiftyHertz}: {"generated", constant(2), constant(0)},
				{"p1", pipeline.TenneT}:     {"generated", func(q int) float64 { return 1.5 + float64(q) }, constant(0.25)},
			},
		},
		{
			name:      "projected plain-string read gives the same sums",
			day:       normalDay,
			projected: true,
			batches: [][]fmRow{concat(
				series("p2", "m1", pipeline.Amprion, pipeline.Consumption, pipeline.SourceDSOProfile, 96, constant(3)),
				series("p1", "m2", pipeline.TransnetBW, pipeline.Production, pipeline.SourceHistory, 96, constant(1)),
			)},
			order: []posKey{{"p1", pipeline.TransnetBW}, {"p2", pipeline.Amprion}},
			want: map[posKey]posWant{
				{"p1", pipeline.TransnetBW}: {"generated", constant(0), constant(1)},
				{"p2", pipeline.Amprion}:    {"generated", constant(3), constant(0)},
			},
		},
		{
			// TenneT is covered by the submitted forecast: one area-tagged
			// consumption series of 10 MW plus a malo-tagged series of
			// 0.5 MWh per quarter-hour = 2 MW, so 12 MW; the malo-tagged
			// series' forecast_malo rows (2 MW each) are not added again,
			// and the generated TenneT rows (1.5 MW) are replaced. Amprion
			// keeps its generated 2 MW.
			name: "submitted area replaces generated, no double counting",
			day:  normalDay,
			batches: [][]fmRow{concat(
				series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceDSOProfile, 96, constant(1.5)),
				series("p1", "m4", pipeline.Amprion, pipeline.Consumption, pipeline.SourceBDEWProfile, 96, constant(2)),
				series("p1", "m9", pipeline.TenneT, pipeline.Consumption, pipeline.SourceSubmitted, 96, constant(2)),
			)},
			submitted: []position.Submitted{{Portfolio: "p1", Forecast: pipeline.Forecast{
				DeliveryDay: normalDay,
				MaloMapping: map[string]pipeline.ControlArea{"m9": pipeline.TenneT},
				Series: []pipeline.Series{
					{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fill(96, 10)},
					{Malo: "m9", Kind: pipeline.Consumption, Unit: pipeline.MWH, Values: mwh(0.5)},
				},
			}}},
			order: []posKey{{"p1", pipeline.Amprion}, {"p1", pipeline.TenneT}},
			want: map[posKey]posWant{
				{"p1", pipeline.Amprion}: {"generated", constant(2), constant(0)},
				{"p1", pipeline.TenneT}:  {"submitted", constant(12), constant(0)},
			},
			submRows: 96,
		},
		{
			// forecast_malo rows with source "submitted" never add to a
			// position, even when no Submitted forecast is passed: Amprion,
			// which has only such rows, gets no position at all.
			name: "submitted rows without a Submitted forecast are left out",
			day:  normalDay,
			batches: [][]fmRow{concat(
				series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceDSOProfile, 96, constant(1.5)),
				series("p1", "m9", pipeline.TenneT, pipeline.Consumption, pipeline.SourceSubmitted, 96, constant(2)),
				series("p1", "m8", pipeline.Amprion, pipeline.Production, pipeline.SourceSubmitted, 96, constant(2)),
			)},
			order:    []posKey{{"p1", pipeline.TenneT}},
			want:     map[posKey]posWant{{"p1", pipeline.TenneT}: {"generated", constant(1.5), constant(0)}},
			submRows: 192,
		},
		{
			// A submitted forecast of a portfolio without any generated rows,
			// with production only: consumption is 0, net negative.
			name: "submitted portfolio without generated rows",
			day:  normalDay,
			batches: [][]fmRow{
				series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceDSOProfile, 96, constant(1)),
			},
			submitted: []position.Submitted{{Portfolio: "p0", Forecast: pipeline.Forecast{
				Series: []pipeline.Series{{ControlArea: pipeline.TransnetBW, Kind: pipeline.Production, Unit: pipeline.MWH, Values: mwh(1)}},
			}}},
			order: []posKey{{"p0", pipeline.TransnetBW}, {"p1", pipeline.TenneT}},
			want: map[posKey]posWant{
				{"p0", pipeline.TransnetBW}: {"submitted", constant(0), constant(4)},
				{"p1", pipeline.TenneT}:     {"generated", constant(1), constant(0)},
			},
		},
		{
			name: "spring-forward day has 92 quarter-hours",
			day:  springDay,
			batches: [][]fmRow{
				series("p1", "m1", pipeline.Amprion, pipeline.Consumption, pipeline.SourceHistory, 92, func(q int) float64 { return float64(q % 4) }),
			},
			order: []posKey{{"p1", pipeline.Amprion}},
			want:  map[posKey]posWant{{"p1", pipeline.Amprion}: {"generated", func(q int) float64 { return float64(q % 4) }, constant(0)}},
		},
		{
			name: "fall-back day has 100 quarter-hours",
			day:  fallDay,
			batches: [][]fmRow{
				series("p1", "m1", pipeline.Amprion, pipeline.Production, pipeline.SourceHistory, 100, constant(0.75)),
			},
			submitted: []position.Submitted{{Portfolio: "p1", Forecast: pipeline.Forecast{
				DeliveryDay: fallDay,
				Series:      []pipeline.Series{{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fill(100, 3)}},
			}}},
			order: []posKey{{"p1", pipeline.Amprion}, {"p1", pipeline.TenneT}},
			want: map[posKey]posWant{
				{"p1", pipeline.Amprion}: {"generated", constant(0), constant(0.75)},
				{"p1", pipeline.TenneT}:  {"submitted", constant(3), constant(0)},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			agg := position.NewAggregator(tc.day)
			for _, rows := range tc.batches {
				var rec arrow.RecordBatch
				if tc.projected {
					rec = projected(t, mem, rows)
				} else {
					rec = forecastBatch(t, mem, tc.day, rows)
				}
				err := agg.Add(rec)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			rec, err := agg.Positions(mem, tc.submitted)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			if !rec.Schema().Equal(pipeline.PositionSchema) {
				t.Fatalf("schema %s", rec.Schema())
			}
			checkPositions(t, position.PositionRows(rec), tc.day, tc.want, tc.order)
			if got := agg.SubmittedRows(); got != tc.submRows {
				t.Errorf("submitted rows left out = %d, want %d", got, tc.submRows)
			}
		})
	}
}

func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestAddInvalid(t *testing.T) {
	ok := series("p1", "m1", pipeline.TenneT, pipeline.Consumption, pipeline.SourceHistory, 96, constant(1))
	cases := []struct {
		name string
		mod  func(r *fmRow)
	}{
		{"qh beyond the day", func(r *fmRow) { r.qh = 96 }},
		{"negative qh", func(r *fmRow) { r.qh = -1 }},
		{"unknown control area", func(r *fmRow) { r.area = "tennet" }},
		{"unknown kind", func(r *fmRow) { r.kind = "storage" }},
		{"unknown source", func(r *fmRow) { r.source = "guess" }},
		{"empty portfolio", func(r *fmRow) { r.portfolio = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			rows := append([]fmRow(nil), ok...)
			tc.mod(&rows[50])
			rec := forecastBatch(t, mem, normalDay, rows)
			defer rec.Release()
			err := position.NewAggregator(normalDay).Add(rec)
			if pipeline.KindOf(err) != pipeline.Invalid {
				t.Fatalf("err = %v, want invalid", err)
			}
		})
	}
	t.Run("missing column", func(t *testing.T) {
		mem := checked(t)
		rec := forecastBatch(t, mem, normalDay, ok)
		defer rec.Release()
		schema := arrow.NewSchema(rec.Schema().Fields()[:pipeline.FMKind], nil)
		small := array.NewRecordBatch(schema, rec.Columns()[:pipeline.FMKind], rec.NumRows())
		defer small.Release()
		if err := position.NewAggregator(normalDay).Add(small); pipeline.KindOf(err) != pipeline.Invalid {
			t.Fatalf("err = %v, want invalid", err)
		}
	})
}

func TestPositionsInvalidSubmitted(t *testing.T) {
	good := pipeline.Series{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fill(96, 1)}
	cases := []struct {
		name string
		subs []position.Submitted
		kind pipeline.ErrorKind
	}{
		{"wrong length", []position.Submitted{{"p1", pipeline.Forecast{Series: []pipeline.Series{{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fill(92, 1)}}}}}, pipeline.Invalid},
		{"unmapped malo", []position.Submitted{{"p1", pipeline.Forecast{Series: []pipeline.Series{{Malo: "m1", Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fill(96, 1)}}}}}, pipeline.Invalid},
		{"other day", []position.Submitted{{"p1", pipeline.Forecast{DeliveryDay: fallDay, Series: []pipeline.Series{good}}}}, pipeline.Invalid},
		{"unknown unit", []position.Submitted{{"p1", pipeline.Forecast{Series: []pipeline.Series{{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: "GW", Values: fill(96, 1)}}}}}, pipeline.Invalid},
		{"two for one portfolio", []position.Submitted{{"p1", pipeline.Forecast{Series: []pipeline.Series{good}}}, {"p1", pipeline.Forecast{Series: []pipeline.Series{good}}}}, pipeline.Conflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			rec, err := position.NewAggregator(normalDay).Positions(mem, tc.subs)
			if err == nil {
				rec.Release()
			}
			if pipeline.KindOf(err) != tc.kind {
				t.Fatalf("err = %v, want %s", err, tc.kind)
			}
		})
	}
}
