package sqldb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// benchLocations builds n market locations with master data shaped like a
// supplier's: mostly SLP households with two slices (a change of supplier
// data in the year), some RLM locations with one.
func benchLocations(n int) []pipeline.Location {
	locs := make([]pipeline.Location, n)
	from := pipeline.NewDay(2025, time.January, 1)
	change := pipeline.NewDay(2026, time.April, 1)
	for i := range locs {
		kwh := 1000 + float64(i%7000)
		areas := pipeline.ControlAreas
		first := pipeline.Slice{Active: true, AnnualConsumptionKWh: &kwh, ControlArea: areas[i%4],
			DSOMPID: fmt.Sprintf("99%011d", i%50), Kind: pipeline.Consumption, MeteringType: pipeline.SLP,
			MGA: fmt.Sprintf("MGA-%03d", i%200), Profile: "H25", ValidFrom: from, ValidTo: &change}
		second := first
		second.ValidFrom, second.ValidTo = change, nil
		kwh2 := kwh * 1.1
		second.AnnualConsumptionKWh = &kwh2
		l := pipeline.Location{Malo: fmt.Sprintf("%011d", 10000000000+i), Slices: []pipeline.Slice{first, second}}
		if i%10 == 0 {
			first.MeteringType, first.Profile, first.AnnualConsumptionKWh, first.ValidTo = pipeline.RLM, "", nil, nil
			l.Slices = []pipeline.Slice{first}
		}
		locs[i] = l
	}
	return locs
}

// BenchmarkCurrentLocations streams 100,000 locations' current master data
// in batches of 1000, as the forecast stage reads them, from each backend.
func BenchmarkCurrentLocations(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := benchDB(b, d)
			const n = 100000
			if _, err := db.StageLocations(ctx, audit("p1", "seed"), benchLocations(n)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				got := 0
				if err := db.CurrentLocations(ctx, "p1", 1000, func(locs []pipeline.Location) error {
					got += len(locs)
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("streamed %d locations, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "locations/s")
		})
	}
}

// BenchmarkMeteredHistory reads the history the forecast stage asks for:
// 2,000 rlm locations with eight weeks of quarter-hour values, of which
// the eight days like the delivery day (one a week), in pages of
// MeteredHistory, from each backend.
func BenchmarkMeteredHistory(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := benchDB(b, d)
			const malos, weeks = 2000, 8
			vals := make([]float64, 96)
			for q := range vals {
				vals[q] = float64(q) / 4
			}
			var batch []pipeline.MeteredEntry
			for m := range malos {
				for k := 1; k <= 7*weeks; k++ {
					batch = append(batch, pipeline.MeteredEntry{Malo: fmt.Sprintf("%011d", 30000000000+m), Day: pday.AddDays(-k), Unit: pipeline.KWH, Values: vals})
				}
				if len(batch) >= 5000 || m == malos-1 {
					if _, err := db.StageMetered(ctx, audit("p1", fmt.Sprint("h", m)), batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			var days []pipeline.Day
			for w := 1; w <= weeks; w++ {
				days = append(days, pday.AddDays(-7*w))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				got := 0
				if err := db.MeteredHistory(ctx, "p1", days, func(e pipeline.MeteredEntry) error {
					got += len(e.Values)
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				if got != malos*weeks*96 {
					b.Fatalf("read %d values, want %d", got, malos*weeks*96)
				}
			}
			b.ReportMetric(float64(malos*weeks)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// benchDB opens a database of the backend with the portfolio p1 in all
// control areas.
func benchDB(b *testing.B, d sqldb.Dialect) *sqldb.DB {
	b.Helper()
	db := sqltest.Open(b, d)
	if _, err := db.PutPortfolio(context.Background(), pipeline.Portfolio{ID: "p1", Name: "Bench", ControlAreas: pipeline.ControlAreas}, t0); err != nil {
		b.Fatal(err)
	}
	return db
}
