package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/schedbridge/schedbridge/api"
)

// portfolioEndpoints are every endpoint that takes a portfolio from its
// caller (all of them by the query parameter portfolio): each one answers
// 404 for a portfolio that does not exist, rather than an empty answer that
// reads like "nothing there yet".
var portfolioEndpoints = []struct {
	method, path string
	body         string
}{
	{"GET", "/v1/process/positions?day=2026-11-24", ""},
	{"GET", "/v1/process/open-position?day=2026-11-24", ""},
	{"GET", "/v1/process/schedules?day=2026-11-24", ""},
	{"GET", "/v1/process/trades?day=2026-11-24", ""},
	{"PUT", "/v1/process/trades?day=2026-11-24", `{"trades":[]}`},
	{"GET", "/v1/process/kalkulation?von=2026-11-01&bis=2026-11-02", ""},
	{"GET", "/v1/process/inbox?limit=10", ""},
	{"GET", "/v1/console/events?limit=10", ""},
	{"GET", "/v1/console/events/stream?last_event_id=0", ""},
	{"GET", "/v1/console/inbox?state=pending", ""},
	{"GET", "/v1/console/inbox?state=rejected", ""},
	{"GET", "/v1/console/schedules?day=2026-11-24", ""},
}

// TestUnknownPortfolio: every endpoint that takes a portfolio answers 404
// with the usual {"detail": ...} body for one that does not exist, on both
// backends; the same request for a portfolio that exists is no 404 (the
// stream is left out there, as its answer never ends).
func TestUnknownPortfolio(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		deps := f.deps
		deps.Results, deps.Recorded, deps.Trades, deps.Calculator = f.db, f.db, f.db, f.runner
		srv := api.New(api.Config{Now: f.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, deps)
		for _, e := range portfolioEndpoints {
			req := f.request(e.method, e.path+"&portfolio=nope", []byte(e.body), "X-API-Key", f.keys["process"])
			r := serve(srv, req)
			var body map[string]any
			_ = json.Unmarshal(r.body, &body)
			if r.code != http.StatusNotFound || body["detail"] != "portfolio nope does not exist" || len(body) != 1 {
				t.Errorf("%s %s: %d %s, want 404 naming the portfolio", e.method, e.path, r.code, r.body)
			}
			if e.path == "/v1/console/events/stream?last_event_id=0" {
				continue
			}
			req = f.request(e.method, e.path+"&portfolio=p1", []byte(e.body), "X-API-Key", f.keys["process"])
			r = serve(srv, req)
			body = nil
			_ = json.Unmarshal(r.body, &body)
			if r.code == http.StatusNotFound && body["detail"] == "portfolio p1 does not exist" {
				t.Errorf("%s %s: known portfolio p1 refused: %s", e.method, e.path, r.body)
			}
		}
		// A report key reads its own portfolio; naming another stays 403,
		// whether it exists or not, so that the answer tells nothing of
		// other portfolios.
		for _, p := range []string{"p2", "nope"} {
			req := f.request("GET", "/v1/process/positions?day=2026-11-24&portfolio="+p, nil, "X-API-Key", f.keys["report1"])
			if r := serve(srv, req); r.code != http.StatusForbidden {
				t.Errorf("report key, portfolio %s: %d %s", p, r.code, r.body)
			}
		}
	})
}
