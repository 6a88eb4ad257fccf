package position_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/position"
)

// BenchmarkAggregate adds one forecast_malo batch of 10,000 locations
// (960,000 rows in two portfolios and four areas) per iteration and reports
// rows/s.
func BenchmarkAggregate(b *testing.B) {
	mem := memory.NewGoAllocator()
	var rows []fmRow
	for i := range 10_000 {
		p := []string{"p1", "p2"}[i%2]
		area := pipeline.ControlAreas[i%4]
		kind := []pipeline.Kind{pipeline.Consumption, pipeline.Production}[i%7/6]
		rows = append(rows, series(p, "m", area, kind, pipeline.SourceHistory, 96, constant(float64(i%13)))...)
	}
	rec := forecastBatch(b, mem, normalDay, rows)
	defer rec.Release()
	agg := position.NewAggregator(normalDay)
	b.ResetTimer()
	for b.Loop() {
		if err := agg.Add(rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
