package forecast_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
	"github.com/schedbridge/schedbridge/pipeline/slp"
)

// benchLocations is the portfolio size of BenchmarkGenerate:
// FORECAST_BENCH_LOCATIONS, default 100,000.
func benchLocations(b *testing.B) int {
	if s := os.Getenv("FORECAST_BENCH_LOCATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("FORECAST_BENCH_LOCATIONS=%q", s)
		}
		return n
	}
	return 100_000
}

// benchInput is a portfolio as the spec sizes it: 95 % slp in a handful of
// profiles across 20 MGAs (half of them with DSO profiles), 5 % rlm with
// eight similar days of kWh history.
type benchInput struct {
	day     pipeline.Day
	dso     []pipeline.ProfileEntry
	malos   []string
	slices  []pipeline.Slice
	history [][]pipeline.MeteredEntry
}

func newBenchInput(n int) *benchInput {
	day := d(tuesday)
	in := &benchInput{day: day, malos: make([]string, n), slices: make([]pipeline.Slice, n), history: make([][]pipeline.MeteredEntry, n)}
	profiles := []string{"H25", "G25", "L25", "P25", "H0"}
	for m := range 10 {
		for _, p := range profiles[:2] {
			in.dso = append(in.dso, constantProfile(day, fmt.Sprintf("MGA%02d", m), p, 20+float64(m)))
		}
	}
	sim := forecast.SimilarDays(day, "", 8)
	areas := pipeline.ControlAreas
	for i := range n {
		annual := float64(1000 + i%7000)
		mga := fmt.Sprintf("MGA%02d", i%20)
		in.malos[i] = fmt.Sprintf("5%010d", i)
		if i%20 == 19 {
			in.slices[i] = slice(pipeline.RLM, areas[i%4], pipeline.Consumption, mga, "", &annual)
			for k, h := range sim {
				v := make([]float64, h.Intervals())
				for q := range v {
					v[q] = float64(100 + (i+k+q)%50)
				}
				in.history[i] = append(in.history[i], pipeline.MeteredEntry{Day: h, Malo: in.malos[i], Unit: pipeline.KWH, Values: v})
			}
			continue
		}
		in.slices[i] = slice(pipeline.SLP, areas[i%4], pipeline.Consumption, mga, profiles[i%len(profiles)], &annual)
	}
	return in
}

// BenchmarkGenerate generates the forecasts of a whole portfolio per
// iteration and reports values/s (rows of forecast_malo per second).
func BenchmarkGenerate(b *testing.B) {
	in := newBenchInput(benchLocations(b))
	table := slp.NewTable()
	alloc := memory.NewGoAllocator()
	var rows int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		g, err := forecast.NewGenerator(forecast.Config{Alloc: alloc, Profiles: table}, "p1", in.day, in.dso,
			func(rec arrow.RecordBatch) error { rows += rec.NumRows(); return nil })
		if err != nil {
			b.Fatal(err)
		}
		for i, m := range in.malos {
			if err := g.Add(m, in.slices[i], in.history[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := g.Flush(); err != nil {
			b.Fatal(err)
		}
		if st := g.Stats(); st.Skipped != 0 || st.Sources[pipeline.SourceHistory] != len(in.malos)/20 {
			b.Fatalf("stats %+v", st)
		}
		g.Release()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "values/s")
	b.ReportMetric(float64(len(in.malos)), "locations")
}
