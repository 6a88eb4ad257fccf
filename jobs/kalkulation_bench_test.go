package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// BenchmarkKalkulation31Days is the benchmark: GET
// /v1/process/kalkulation over 31 days (October 2026, with the 25-hour day)
// for a portfolio in all four control areas, through the HTTP handler, on
// both databases. The kalkulation stage's rows and a month of spot and
// reBAP prices are stored first, as the stage and the imports would.
func BenchmarkKalkulation31Days(b *testing.B) {
	for _, c := range combos {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b, c)
			ctx := context.Background()
			p := pipeline.Portfolio{ID: "bench", Name: "Bench", BalancingGroup: bg, ExchangeBalancingGroup: exchange,
				ControlAreas: pipeline.ControlAreas}
			if _, err := e.db.PutPortfolio(ctx, p, t0); err != nil {
				b.Fatal(err)
			}
			von, bis := pipeline.NewDay(2026, 10, 1), pipeline.NewDay(2026, 10, 31)
			var spot, rebap []price.Point
			rows := 0
			for d := von; !bis.Before(d); d = d.AddDays(1) {
				run, err := e.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageKalkulation, Day: d, Status: pipeline.RunRunning,
					Trigger: "bench", Attempt: 1, StartedAt: t0})
				if err != nil {
					b.Fatal(err)
				}
				var rs []kalkulation.Row
				for ai, area := range pipeline.ControlAreas {
					for q, us := range d.QuarterStartsMicros() {
						ts := time.UnixMicro(us).UTC()
						base := 40 + 10*float64(ai) + 5*math.Sin(float64(q)/15)
						rs = append(rs, kalkulation.Row{Portfolio: p.ID, ControlArea: area, Day: d, QH: q, TS: ts,
							BoughtMW: base + 2, SoldMW: 2, IstMW: base + math.Cos(float64(q)), Basis: kalkulation.BasisIst})
						if ai == 0 {
							v := 90 + 30*math.Sin(float64(q)/8)
							spot = append(spot, price.Point{Start: ts, Minutes: 15, Price: v, PriceLong: v})
							rebap = append(rebap, price.Point{Start: ts, Minutes: 15, Price: v + 40, PriceLong: v - 30})
						}
					}
				}
				if err := e.db.PublishKalkulation(ctx, run.ID, d, rs); err != nil {
					b.Fatal(err)
				}
				rows += len(rs)
			}
			if _, err := e.db.PutPrices(ctx, price.Spot, spot, "bench", t0); err != nil {
				b.Fatal(err)
			}
			if _, err := e.db.PutPrices(ctx, price.ReBAP, rebap, "bench", t0); err != nil {
				b.Fatal(err)
			}
			const secret = "sbk_bench_process"
			if err := e.db.CreateKey(ctx, pipeline.APIKey{ID: "key_bench", Scope: pipeline.ScopeProcess, CreatedAt: t0}, pipeline.HashKey(secret)); err != nil {
				b.Fatal(err)
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			srv := api.New(api.Config{Now: func() time.Time { return t0 }, Logger: quiet},
				api.Deps{Keys: e.db, Portfolios: e.db, DB: e.db, Calculator: e.runner()})
			h := srv.Handler()
			get := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodGet, "/v1/process/kalkulation?von=2026-10-01&bis=2026-10-31&portfolio=bench", nil)
				req.Header.Set("X-API-Key", secret)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			if rec := get(); rec.Code != 200 {
				b.Fatalf("GET: %d %s", rec.Code, rec.Body)
			}
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if rec := get(); rec.Code != 200 {
					b.Fatalf("GET: %d", rec.Code)
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/request")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}
