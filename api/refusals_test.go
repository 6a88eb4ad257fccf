package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestRefusalsBounded: a flood of bad credentials costs a bounded number
// of audit rows. Every refusal is answered (401), but per minute only
// RefusalsPerAddress of one address, and RefusalsTotal of all, are recorded
// one by one; the one that meets a limit says so, the rest are counted in
// a metric. Accepted requests are recorded whatever the flood.
func TestRefusalsBounded(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			clk := clocktest.New(now)
			reg := prometheus.NewRegistry()
			f := newFixture(t, d, api.Config{Now: clk.Now, Registry: reg, RefusalsPerAddress: 3, RefusalsTotal: 6})
			ctx := context.Background()
			bad := func(addr string) {
				t.Helper()
				req := f.request("POST", "/v1/forecasts", nil, "X-API-Key", "sbk_wrong")
				req.RemoteAddr = addr
				if r := serve(f.srv, req); r.code != http.StatusUnauthorized || r.json(t)["detail"] != "invalid API key" {
					t.Fatalf("bad key from %s: %d %s", addr, r.code, r.body)
				}
			}
			rows := func() int {
				t.Helper()
				entries, err := f.db.RecentAudit(ctx, 1000)
				if err != nil {
					t.Fatal(err)
				}
				return len(entries)
			}
			unrecorded := func() float64 {
				t.Helper()
				mfs, err := reg.Gather()
				if err != nil {
					t.Fatal(err)
				}
				for _, mf := range mfs {
					if mf.GetName() == "schedbridge_audit_refusals_unrecorded_total" {
						return mf.GetMetric()[0].GetCounter().GetValue()
					}
				}
				t.Fatal("no metric schedbridge_audit_refusals_unrecorded_total")
				return 0
			}

			for range 20 {
				bad("192.0.2.1:4000")
			}
			if n := rows(); n != 4 {
				t.Fatalf("rows after 20 refusals of one address: %d, want 3 and the one that meets the limit", n)
			}
			last, _ := f.db.RecentAudit(ctx, 1)
			if !strings.Contains(last[0].Detail, "limit of 3 refusals per minute of the address 192.0.2.1/32 met") ||
				!strings.Contains(last[0].Detail, "until 2026-11-22T09:31:00Z") {
				t.Errorf("the row that meets the limit: %q", last[0].Detail)
			}
			if got := unrecorded(); got != 16 {
				t.Errorf("unrecorded refusals: %v, want 16", got)
			}
			// Another address has its own budget, until all addresses
			// together meet theirs.
			for range 5 {
				bad("[2001:db8:1:2::7]:4000")
			}
			if n := rows(); n != 7 {
				t.Fatalf("rows after a second address: %d, want 7", n)
			}
			last, _ = f.db.RecentAudit(ctx, 1)
			if !strings.Contains(last[0].Detail, "limit of 6 refusals per minute of all clients met") {
				t.Errorf("the row that meets the total: %q", last[0].Detail)
			}
			bad("198.51.100.9:1")
			if n := rows(); n != 7 {
				t.Errorf("a third address was recorded beyond the total: %d rows", n)
			}
			// Nothing legitimate is lost.
			if r := f.as("data1", "POST", "/v1/forecasts", forecast("2026-11-23", 96, 1, "")); r.code != http.StatusOK {
				t.Fatalf("accepted request: %d %s", r.code, r.body)
			}
			if r := f.as("data1", "GET", "/v1/master-data/01234567890", nil); r.code != http.StatusNotFound {
				t.Fatalf("read: %d %s", r.code, r.body)
			}
			if n := rows(); n != 9 {
				t.Errorf("rows after two accepted requests: %d, want 9", n)
			}
			// The next minute has a new budget.
			clk.Add(time.Minute)
			bad("192.0.2.1:4000")
			if n := rows(); n != 10 {
				t.Errorf("rows in the next minute: %d, want 10", n)
			}
			if got := unrecorded(); got != 16+2+1 {
				t.Errorf("unrecorded refusals: %v, want 19", got)
			}
		})
	}
}

// unsignedToken is a compact JWT of header and claims with a made-up
// signature.
func unsignedToken(t *testing.T, header, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeToString(h) + "." + enc.EncodeToString(c) + "." + enc.EncodeToString([]byte("signature"))
}

// TestRefusalDetailCapped: a refusal's answer and audit row quote the
// client's values (here a 10 KB issuer) at most a few hundred bytes, and an
// Authorization header beyond 16 KiB is refused before it is parsed.
func TestRefusalDetailCapped(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		v, err := bearer.New(context.Background(), f.db, bearer.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.Close() })
		deps := f.deps
		deps.Tokens, deps.TokenClients = v, f.db
		srv := api.New(api.Config{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, deps)
		long := "https://" + strings.Repeat("i", 10_000)
		tok := unsignedToken(t, map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": "k"}, map[string]any{"iss": long})
		r := serve(srv, f.request("POST", "/v1/forecasts", nil, "Authorization", "Bearer "+tok))
		if r.code != http.StatusUnauthorized || len(r.body) > 500 || !strings.Contains(string(r.body), "iiii…") {
			t.Errorf("long issuer: %d, %d bytes: %.300s", r.code, len(r.body), r.body)
		}
		huge := "Bearer " + strings.Repeat("a", 700_000)
		r = serve(srv, f.request("POST", "/v1/forecasts", nil, "Authorization", huge))
		if r.code != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != `Bearer error="invalid_request"` ||
			!strings.Contains(string(r.body), "at most 16384 are accepted") || len(r.body) > 500 {
			t.Errorf("huge header: %d %s %.300s", r.code, r.header, r.body)
		}
		entries, err := f.db.RecentAudit(context.Background(), 2)
		if err != nil || len(entries) != 2 {
			t.Fatalf("audit: %v %v", entries, err)
		}
		for _, e := range entries {
			if len(e.Detail) > 500 {
				t.Errorf("audit detail of %d bytes: %.300s", len(e.Detail), e.Detail)
			}
		}
	})
}
