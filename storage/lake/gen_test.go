package lake_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The synthetic forecast_malo rows of the tests and the benchmark. Location
// loc is market location malo(loc); every row's attributes and power follow
// from loc and the quarter-hour, so a test can recompute what any row must
// hold without keeping what it wrote.

var (
	portfolios    = []string{"acme", "bravo"}
	controlAreas  = []string{"50Hertz", "Amprion", "TenneT", "TransnetBW"}
	kinds         = []string{"consumption", "production"}
	meteringTypes = []string{"slp", "tlp", "rlm", "imsys"}
	sources       = []string{pipeline.SourceDSOProfile, pipeline.SourceBDEWProfile, pipeline.SourceHistory}
)

func malo(loc int) string { return fmt.Sprintf("%011d", 50000000000+loc) }

func portfolioOf(loc int) int { return loc % len(portfolios) }
func areaOf(loc int) int      { return (loc / 2) % len(controlAreas) }
func kindOf(loc int) int {
	if loc%7 == 3 {
		return 1
	}
	return 0
}
func meteringOf(loc int) int { return (loc / 3) % len(meteringTypes) }
func sourceOf(loc int) int   { return (loc / 5) % len(sources) }

// powerOf is pseudo-random, so that files compress like measured data, and a
// multiple of 1/1024 below 1000, so that every sum is exact in float64 and
// does not depend on the order of addition.
func powerOf(loc, q int) float64 {
	h := uint64(loc)*0x9E3779B97F4A7C15 ^ uint64(q+1)*0xBF58476D1CE4E5B9
	h ^= h >> 31
	h *= 0x94D049BB133111EB
	h ^= h >> 29
	return float64(h%1_000_000) / 1024
}

// forecastBatch builds the rows of locations first..first+n-1 for day, with a
// dictionary of its own in every string column, in order of first
// appearance, as the forecast stage's per-batch builders make them. The
// dictionaries are built directly rather than through dictionary builders so
// that generating the benchmark's 96 million rows costs little.
func forecastBatch(mem memory.Allocator, day pipeline.Day, first, n int) arrow.RecordBatch {
	nq := day.Intervals()
	rows := n * nq
	ts := day.QuarterStartsMicros()
	cols := []arrow.Array{
		dictColumn(mem, rows, nq, first, n, func(loc int) string { return portfolios[portfolioOf(loc)] }),
		repeatDate(mem, rows, day.Date32()),
		dictColumn(mem, rows, nq, first, n, malo),
		dictColumn(mem, rows, nq, first, n, func(loc int) string { return controlAreas[areaOf(loc)] }),
		dictColumn(mem, rows, nq, first, n, func(loc int) string { return kinds[kindOf(loc)] }),
		dictColumn(mem, rows, nq, first, n, func(loc int) string { return meteringTypes[meteringOf(loc)] }),
		dictColumn(mem, rows, nq, first, n, func(loc int) string { return sources[sourceOf(loc)] }),
	}
	qh := array.NewInt16Builder(mem)
	tsb := array.NewTimestampBuilder(mem, pipeline.TimestampUTC)
	pw := array.NewFloat64Builder(mem)
	qh.Reserve(rows)
	tsb.Reserve(rows)
	pw.Reserve(rows)
	for loc := first; loc < first+n; loc++ {
		for q := 0; q < nq; q++ {
			qh.UnsafeAppend(int16(q))
			tsb.UnsafeAppend(arrow.Timestamp(ts[q]))
			pw.UnsafeAppend(powerOf(loc, q))
		}
	}
	for _, b := range []array.Builder{qh, tsb, pw} {
		cols = append(cols, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(pipeline.ForecastMaloSchema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// dictColumn repeats value(loc) nq times per location.
func dictColumn(mem memory.Allocator, rows, nq, first, n int, value func(int) string) arrow.Array {
	memo := map[string]int32{}
	db := array.NewStringBuilder(mem)
	defer db.Release()
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.Reserve(rows)
	for loc := first; loc < first+n; loc++ {
		s := value(loc)
		idx, ok := memo[s]
		if !ok {
			idx = int32(len(memo))
			memo[s] = idx
			db.Append(s)
		}
		for range nq {
			ib.UnsafeAppend(idx)
		}
	}
	dict, idx := db.NewArray(), ib.NewArray()
	defer dict.Release()
	defer idx.Release()
	return array.NewDictionaryArray(pipeline.ForecastMaloSchema.Field(pipeline.FMPortfolio).Type, idx, dict)
}

func repeatDate(mem memory.Allocator, rows int, d arrow.Date32) arrow.Array {
	b := array.NewDate32Builder(mem)
	defer b.Release()
	b.Reserve(rows)
	for range rows {
		b.UnsafeAppend(d)
	}
	return b.NewArray()
}

// expectedRow is what row q of location loc holds, as strings and numbers,
// in the order of ForecastMaloSchema.
type expectedRow struct {
	portfolio, malo, area, kind, metering, source string
	day                                           arrow.Date32
	qh                                            int16
	ts                                            int64
	power                                         float64
}

func expected(day pipeline.Day, loc, q int) expectedRow {
	return expectedRow{
		portfolio: portfolios[portfolioOf(loc)], malo: malo(loc), area: controlAreas[areaOf(loc)],
		kind: kinds[kindOf(loc)], metering: meteringTypes[meteringOf(loc)], source: sources[sourceOf(loc)],
		day: day.Date32(), qh: int16(q), ts: day.QuarterStartsMicros()[q], power: powerOf(loc, q),
	}
}

// rowOf reads row i of a full forecast_malo batch.
func rowOf(rec arrow.RecordBatch, i int) expectedRow {
	str := func(c int) string {
		d := rec.Column(c).(*array.Dictionary)
		return d.Dictionary().(*array.String).Value(d.GetValueIndex(i))
	}
	return expectedRow{
		portfolio: str(pipeline.FMPortfolio), malo: str(pipeline.FMMalo), area: str(pipeline.FMControlArea),
		kind: str(pipeline.FMKind), metering: str(pipeline.FMMeteringType), source: str(pipeline.FMSource),
		day:   rec.Column(pipeline.FMDay).(*array.Date32).Value(i),
		qh:    rec.Column(pipeline.FMQH).(*array.Int16).Value(i),
		ts:    int64(rec.Column(pipeline.FMTS).(*array.Timestamp).Value(i)),
		power: rec.Column(pipeline.FMPowerMW).(*array.Float64).Value(i),
	}
}
