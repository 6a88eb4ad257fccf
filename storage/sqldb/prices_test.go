package sqldb_test

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

var priceStart = time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC) // 29 March 2026, 00:00 in Berlin

// quarterPoints returns n quarter-hour points from priceStart with price
// f(i) (and PriceLong f(i) - 1).
func quarterPoints(n int, f func(i int) float64) []price.Point {
	out := make([]price.Point, n)
	for i := range out {
		out[i] = price.Point{Start: priceStart.Add(time.Duration(i) * 15 * time.Minute), Minutes: 15, Price: f(i), PriceLong: f(i) - 1}
	}
	return out
}

// TestPrices: quarter-hours are upserted by kind and start; only new or
// changed ones are counted and written; reads are [from, to).
func TestPrices(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		first := quarterPoints(8, func(i int) float64 { return float64(i) - 3.25 }) // negative prices too
		if n, err := db.PutPrices(ctx, price.ReBAP, first, "rebap-1.csv", t0); err != nil || n != 8 {
			t.Fatalf("first import = %d, %v", n, err)
		}
		if n, err := db.PutPrices(ctx, price.ReBAP, first, "rebap-2.csv", t0.Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("same import again = %d, %v", n, err)
		}
		if src, err := sqldb.QueryString(ctx, db, "SELECT source FROM market_prices WHERE start_unix = ?", priceStart.Unix()); err != nil || src != "rebap-1.csv" {
			t.Errorf("an unchanged quarter-hour was rewritten: source %q, %v", src, err)
		}

		second := quarterPoints(10, func(i int) float64 { return float64(i) - 3.25 })
		second[2].Price = 500       // changed short price
		second[5].PriceLong = -1000 // changed long price only
		if n, err := db.PutPrices(ctx, price.ReBAP, second, "rebap-2.csv", t0.Add(time.Hour)); err != nil || n != 4 {
			t.Errorf("second import = %d, %v; want 2 changed + 2 new", n, err)
		}
		got, err := db.Prices(ctx, price.ReBAP, priceStart, priceStart.Add(10*15*time.Minute))
		if err != nil || !reflect.DeepEqual(got, second) {
			t.Errorf("read = %+v, %v\nwant %+v", got, err, second)
		}
		src, _ := sqldb.QueryString(ctx, db, "SELECT source FROM market_prices WHERE start_unix = ?", second[2].Start.Unix())
		if src != "rebap-2.csv" {
			t.Errorf("a changed quarter-hour keeps source %q", src)
		}

		// The bounds: from is included, to is not; a bound inside a
		// quarter-hour excludes the quarter-hour that starts before it.
		for _, c := range []struct {
			name     string
			from, to time.Time
			want     []price.Point
		}{
			{"one quarter-hour", second[3].Start, second[4].Start, second[3:4]},
			{"bounds inside quarter-hours", second[3].Start.Add(time.Second), second[6].Start.Add(time.Nanosecond), second[4:7]},
			{"a Berlin-zoned range", second[1].Start.In(pipeline.Berlin), second[3].Start.In(pipeline.Berlin), second[1:3]},
			{"before any", priceStart.Add(-time.Hour), priceStart, []price.Point{}},
			{"empty range", second[4].Start, second[4].Start, []price.Point{}},
		} {
			got, err := db.Prices(ctx, price.ReBAP, c.from, c.to)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: %+v, %v\nwant %+v", c.name, got, err, c.want)
			}
		}
		// Kinds are separate series.
		if got, err := db.Prices(ctx, price.Spot, priceStart, priceStart.Add(24*time.Hour)); err != nil || len(got) != 0 {
			t.Errorf("spot before any spot import = %+v, %v", got, err)
		}
		hourly := price.QuarterHours([]price.Point{{Start: priceStart, Minutes: 60, Price: -12.5, PriceLong: -12.5}})
		if n, err := db.PutPrices(ctx, price.Spot, hourly, "smard", t0); err != nil || n != 4 {
			t.Errorf("hourly spot = %d, %v", n, err)
		}
		if got, _ := db.Prices(ctx, price.Spot, priceStart, priceStart.Add(24*time.Hour)); !reflect.DeepEqual(got, hourly) {
			t.Errorf("spot = %+v\nwant %+v", got, hourly)
		}
		// A quarter-hourly price replaces an hourly one of the same
		// quarter-hour: the interval length is part of the value.
		qh := hourly[1]
		qh.Minutes = 15
		if n, err := db.PutPrices(ctx, price.Spot, []price.Point{qh}, "smard", t0); err != nil || n != 1 {
			t.Errorf("15-minute over 60-minute price = %d, %v", n, err)
		}

		bad := func(mod func(p *price.Point)) []price.Point {
			ps := quarterPoints(3, func(int) float64 { return 9999 })
			mod(&ps[1])
			return ps
		}
		for _, c := range []struct {
			name   string
			kind   price.Kind
			points []price.Point
		}{
			{"unknown kind", "intraday", quarterPoints(1, func(int) float64 { return 1 })},
			{"start inside a quarter-hour", price.Spot, bad(func(p *price.Point) { p.Start = p.Start.Add(time.Minute) })},
			{"start with a fraction of a second", price.Spot, bad(func(p *price.Point) { p.Start = p.Start.Add(time.Millisecond) })},
			{"zero start", price.Spot, bad(func(p *price.Point) { p.Start = time.Time{} })},
			{"30-minute interval", price.Spot, bad(func(p *price.Point) { p.Minutes = 30 })},
			{"NaN", price.Spot, bad(func(p *price.Point) { p.Price = math.NaN() })},
			{"infinite long price", price.ReBAP, bad(func(p *price.Point) { p.PriceLong = math.Inf(-1) })},
			{"start twice", price.Spot, bad(func(p *price.Point) { p.Start = priceStart })},
		} {
			if _, err := db.PutPrices(ctx, c.kind, c.points, "bad", t0); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if n, _ := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM market_prices WHERE price = 9999"); n != "0" {
			t.Errorf("invalid imports wrote %s prices", n)
		}
		if _, err := db.Prices(ctx, "intraday", priceStart, priceStart); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("read of unknown kind: %v", err)
		}
		if n, err := db.PutPrices(ctx, price.Spot, nil, "empty", t0); err != nil || n != 0 {
			t.Errorf("no points = %d, %v", n, err)
		}
	})
}

// yearOfQuarterHours is 2025 in quarter-hours (35,040).
func yearOfQuarterHours(f func(i int) float64) []price.Point {
	start := pipeline.NewDay(2025, time.January, 1).Start().UTC()
	n := int(pipeline.NewDay(2026, time.January, 1).Start().Sub(start) / (15 * time.Minute))
	out := make([]price.Point, n)
	for i := range out {
		out[i] = price.Point{Start: start.Add(time.Duration(i) * 15 * time.Minute), Minutes: 15, Price: f(i), PriceLong: f(i) + 0.5}
	}
	return out
}

// BenchmarkPutPricesYear stores a year of quarter-hour prices on each
// backend: "changed" rewrites every quarter-hour with new values (the first
// iteration inserts them), "unchanged" re-imports the same year, which
// writes nothing.
func BenchmarkPutPricesYear(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := sqltest.Open(b, d)
			round := 0
			b.Run("changed", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					round++
					year := yearOfQuarterHours(func(i int) float64 { return float64(i%500) + float64(round) })
					n, err := db.PutPrices(ctx, price.Spot, year, "bench", t0)
					if err != nil || n != len(year) {
						b.Fatalf("stored %d of %d, %v", n, len(year), err)
					}
				}
			})
			b.Run("unchanged", func(b *testing.B) {
				year := yearOfQuarterHours(func(i int) float64 { return float64(i%500) + float64(round) })
				b.ReportAllocs()
				for b.Loop() {
					if n, err := db.PutPrices(ctx, price.Spot, year, "bench", t0); err != nil || n != 0 {
						b.Fatalf("stored %d, %v", n, err)
					}
				}
			})
		})
	}
}
