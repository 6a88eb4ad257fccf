package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) { os.Exit(sqltest.Main(m)) }

var now = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// fixture is a server on a real database with portfolios and keys of every scope.
type fixture struct {
	t      testing.TB
	db     *sqldb.DB
	srv    *api.Server
	deps   api.Deps
	keys   map[string]string // name -> secret
	bucket *objstore.Local
	inbox  *inbox.Processor
	wakes  *wakeCounter
}

// inboxStore hands the store's bulk transaction to the inbox as its Stager.
type inboxStore struct{ *sqldb.DB }

func (s inboxStore) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (inbox.Stager, error) {
	return s.DB.BeginBulk(ctx, kind, portfolio, now)
}

// wakeCounter counts inbox wake-ups.
type wakeCounter struct{ n atomic.Int64 }

func (w *wakeCounter) Wake() { w.n.Add(1) }

func newFixture(t testing.TB, d sqldb.Dialect, cfg api.Config) *fixture {
	db := sqltest.Open(t, d)
	ctx := context.Background()
	for _, p := range []pipeline.Portfolio{
		{ID: "p1", Name: "One", ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.FiftyHertz}},
		{ID: "p2", Name: "Two", ControlAreas: []pipeline.ControlArea{pipeline.Amprion}},
	} {
		if _, err := db.PutPortfolio(ctx, p, now); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, db: db, keys: map[string]string{}}
	for _, k := range []struct {
		name, portfolio string
		scope           pipeline.Scope
	}{
		{"data1", "p1", pipeline.ScopeData}, {"data2", "p2", pipeline.ScopeData},
		{"report1", "p1", pipeline.ScopeReport}, {"process", "", pipeline.ScopeProcess},
		{"mobile", "", pipeline.ScopeMobile}, {"revoked", "p1", pipeline.ScopeData},
	} {
		secret := "sbk_test_" + k.name
		if err := db.CreateKey(ctx, pipeline.APIKey{ID: "key_" + k.name, Scope: k.scope, PortfolioID: k.portfolio, CreatedAt: now}, pipeline.HashKey(secret)); err != nil {
			t.Fatal(err)
		}
		f.keys[k.name] = secret
	}
	if err := db.RevokeKey(ctx, "key_revoked", now); err != nil {
		t.Fatal(err)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return now }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	bucket, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.bucket, f.wakes = bucket, &wakeCounter{}
	if f.inbox, err = inbox.New(bucket, inboxStore{db}, inbox.Config{Owner: "test", Now: cfg.Now}); err != nil {
		t.Fatal(err)
	}
	f.deps = api.Deps{Keys: db, Portfolios: db, Staging: db, Audit: db, DB: db,
		InboxFiles: db, Inbox: f.inbox, Waker: f.wakes, Events: db}
	f.srv = api.New(cfg, f.deps)
	return f
}

func eachBackend(t *testing.T, cfg api.Config, fn func(t *testing.T, f *fixture)) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, newFixture(t, d, cfg))
		})
	}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func (f *fixture) do(method, path string, body []byte, headers ...string) response {
	return serve(f.srv, f.request(method, path, body, headers...))
}

// request builds a request with headers given as name, value pairs.
func (f *fixture) request(method, path string, body []byte, headers ...string) *http.Request {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return req
}

func serve(srv *api.Server, req *http.Request) response {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func (f *fixture) as(key, method, path string, body []byte) response {
	return f.do(method, path, body, "X-API-Key", f.keys[key])
}

func values(n int, v float64) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func forecast(day string, n int, v float64, extra string) []byte {
	return []byte(fmt.Sprintf(`{"delivery_day":%q,"series":[{"control_area":"TenneT","kind":"consumption","unit":"MW","values":%s}]%s}`,
		day, values(n, v), extra))
}

func TestAuthentication(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		body := forecast("2026-11-23", 96, 1, "")
		const missing = "missing credential: send an API key in the X-API-Key header or an access token as Authorization: Bearer"
		tests := []struct {
			name    string
			path    string
			headers []string
			want    int
			detail  string
			// challenge is the WWW-Authenticate header (RFC 6750): every
			// 401 carries one, a 403 of a key none.
			challenge string
		}{
			{"no key", "/v1/forecasts", nil, 401, missing, "Bearer"},
			{"key in query", "/v1/forecasts?api_key=" + f.keys["data1"], nil, 401, missing, "Bearer"},
			{"plain authorization", "/v1/forecasts", []string{"Authorization", f.keys["data1"]}, 401,
				"the Authorization header takes a bearer token only; send an API key in the X-API-Key header", "Bearer"},
			{"bearer without issuers", "/v1/forecasts", []string{"Authorization", "Bearer " + f.keys["data1"]}, 401,
				"invalid bearer token: this server accepts no access tokens; send the key in the X-API-Key header", `Bearer error="invalid_token"`},
			{"key and bearer", "/v1/forecasts", []string{"X-API-Key", f.keys["data1"], "Authorization", "Bearer x.y.z"}, 401,
				"send either an X-API-Key header or an Authorization: Bearer token, not both", `Bearer error="invalid_request"`},
			{"quoted key", "/v1/forecasts", []string{"X-API-Key", `"` + f.keys["data1"] + `"`}, 401, "invalid API key", "Bearer"},
			{"two keys", "/v1/forecasts", []string{"X-API-Key", f.keys["data1"], "X-API-Key", f.keys["data1"]}, 401, "send exactly one X-API-Key header", `Bearer error="invalid_request"`},
			{"revoked", "/v1/forecasts", []string{"X-API-Key", f.keys["revoked"]}, 401, "API key key_revoked has been revoked", "Bearer"},
			{"report key", "/v1/forecasts", []string{"X-API-Key", f.keys["report1"]}, 403, "this endpoint needs a data key; key key_report1 has scope report", ""},
			{"process key", "/v1/forecasts", []string{"X-API-Key", f.keys["process"]}, 403, "this endpoint needs a data key; key key_process has scope process", ""},
			{"mobile key", "/v1/forecasts", []string{"X-API-Key", f.keys["mobile"]}, 403, "this endpoint needs a data key; key key_mobile has scope mobile", ""},
			{"data key", "/v1/forecasts", []string{"X-API-Key", f.keys["data1"]}, 200, "", ""},
		}
		for _, tt := range tests {
			r := f.do("POST", tt.path, body, tt.headers...)
			if r.code != tt.want {
				t.Errorf("%s: status %d, want %d (%s)", tt.name, r.code, tt.want, r.body)
				continue
			}
			if tt.detail != "" {
				if got := r.json(t)["detail"]; got != tt.detail {
					t.Errorf("%s: detail %q, want %q", tt.name, got, tt.detail)
				}
			}
			if got := r.header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("%s: WWW-Authenticate %q, want %q", tt.name, got, tt.challenge)
			}
		}
		// Every write request is in the audit trail, refused ones too, with the
		// key where it was known.
		entries, err := f.db.RecentAudit(context.Background(), 100)
		if err != nil || len(entries) != len(tests) {
			t.Fatalf("audit entries = %d, %v; want %d", len(entries), err, len(tests))
		}
		for i, tt := range tests {
			e := entries[len(entries)-1-i]
			if e.StatusCode != tt.want || e.Endpoint != "POST /v1/forecasts" {
				t.Errorf("audit %s: %+v", tt.name, e)
			}
		}
		if e := entries[len(entries)-1]; e.Outcome != "unauthorized" || e.KeyID != "" || e.Detail != tests[0].detail {
			t.Errorf("audit of keyless request: %+v", e)
		}
		if e := entries[len(entries)-9]; e.Outcome != "forbidden" || e.KeyID != "key_report1" || e.PortfolioID != "p1" {
			t.Errorf("audit of report key: %+v", e)
		}
		if e := entries[0]; e.Outcome != "created" || e.InputHash == "" || e.Counts["values"] != 96 {
			t.Errorf("audit of accepted request: %+v", e)
		}
		if r := f.as("report1", "GET", "/v1/master-data/01234567890", nil); r.code != 403 {
			t.Errorf("report key on read-back: %d", r.code)
		}
		f.as("data1", "GET", "/v1/master-data/01234567890", nil)
		entries, _ = f.db.RecentAudit(context.Background(), 2)
		if len(entries) != 2 || entries[0].Endpoint != "GET /v1/master-data/:malo" || entries[0].Outcome != "not_found" ||
			entries[1].Outcome != "forbidden" {
			t.Errorf("reads not audited: %+v", entries)
		}
	})
}

func TestForecastLifecycle(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		r := f.as("data1", "POST", "/v1/forecasts", forecast("2026-03-29", 92, 1.5, ""))
		if r.code != 200 {
			t.Fatalf("create: %d %s", r.code, r.body)
		}
		ack := r.json(t)
		hash, _ := ack["input_hash"].(string)
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(hash) || ack["status"] != "created" ||
			ack["received_at"] != "2026-11-22T09:30:00Z" || ack["portfolio"] != "p1" || ack["version"] != 1.0 {
			t.Fatalf("ack = %v", ack)
		}
		counts := ack["counts"].(map[string]any)
		if counts["series"] != 1.0 || counts["values"] != 92.0 || counts["created"] != 1.0 {
			t.Errorf("counts = %v", counts)
		}

		// Same content, other whitespace, key order and number spelling.
		same := []byte(fmt.Sprintf("{\n \"series\": [ {\"values\": %s, \"kind\": \"consumption\", \"control_area\": \"TenneT\"} ],\n \"delivery_day\": \"2026-03-29\" }",
			strings.ReplaceAll(values(92, 1.5), "1.5", "1.50")))
		r = f.as("data1", "POST", "/v1/forecasts", same)
		if a := r.json(t); r.code != 200 || a["status"] != "unchanged" || a["input_hash"] != hash || a["version"] != 1.0 {
			t.Errorf("identical re-send: %d %v", r.code, a)
		}
		r = f.as("data1", "POST", "/v1/forecasts", forecast("2026-03-29", 92, 9, `,"validate_only":true`))
		va := r.json(t)
		if r.code != 200 || va["status"] != "validated" || va["input_hash"] == hash {
			t.Errorf("validate_only: %d %v", r.code, va)
		}
		r = f.as("data1", "GET", "/v1/forecasts/2026-03-29", nil)
		if got := r.json(t); r.code != 200 || got["version"] != 1.0 || got["input_hash"] != hash {
			t.Errorf("validate_only stored something: %v", got)
		}
		r = f.as("data1", "POST", "/v1/forecasts", forecast("2026-03-29", 92, 9, ""))
		replaced := r.json(t)
		if replaced["status"] != "replaced" || replaced["version"] != 2.0 || replaced["input_hash"] != va["input_hash"] {
			t.Errorf("replace: %v (validate_only hash %v)", replaced, va["input_hash"])
		}

		r = f.as("data1", "GET", "/v1/forecasts/2026-03-29", nil)
		got := r.json(t)
		sub := got["submission"].(map[string]any)
		if got["version"] != 2.0 || got["delivery_day"] != "2026-03-29" || len(sub["series"].([]any)) != 1 {
			t.Errorf("read back: %v", got)
		}
		r = f.as("data1", "GET", "/v1/forecasts/2026-03-29?version=1", nil)
		if got := r.json(t); got["input_hash"] != hash || got["superseded_at"] == nil {
			t.Errorf("version 1: %v", got)
		}
		r = f.as("data1", "GET", "/v1/forecasts/2026-03-29/versions", nil)
		if vs := r.json(t)["versions"].([]any); len(vs) != 2 {
			t.Errorf("versions: %s", r.body)
		}
		if r := f.as("data2", "GET", "/v1/forecasts/2026-03-29", nil); r.code != 404 {
			t.Errorf("other portfolio reads forecast: %d", r.code)
		}
		if r := f.as("data1", "GET", "/v1/forecasts/2026-03-30", nil); r.code != 404 || r.json(t)["detail"] != "no forecast for 2026-03-30" {
			t.Errorf("no forecast: %d %s", r.code, r.body)
		}

		r = f.as("data1", "GET", "/v1/submissions/"+hash, nil)
		reqs := r.json(t)["requests"].([]any)
		if r.code != 200 || len(reqs) != 2 {
			t.Fatalf("submissions: %d %s", r.code, r.body)
		}
		first := reqs[0].(map[string]any)
		if first["outcome"] != "created" || first["status_code"] != 200.0 || first["key_id"] != "key_data1" || first["endpoint"] != "POST /v1/forecasts" {
			t.Errorf("audit entry: %v", first)
		}
		if reqs[1].(map[string]any)["outcome"] != "unchanged" {
			t.Errorf("second audit entry: %v", reqs[1])
		}
		if r := f.as("data2", "GET", "/v1/submissions/"+hash, nil); r.code != 404 {
			t.Errorf("other portfolio sees audit: %d", r.code)
		}
	})
}

func TestValidationOverHTTP(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		// Business failures: the first in detail, all in errors, nothing stored.
		body := []byte(fmt.Sprintf(`{"delivery_day":"2026-03-29","series":[
			{"control_area":"TenneT","kind":"consumption","values":%s},
			{"control_area":"Amprion","kind":"consumption","values":%s},
			{"malo":"01234567890","kind":"production","values":%s}]}`, values(96, 1), values(92, 1), values(92, 1)))
		r := f.as("data1", "POST", "/v1/forecasts", body)
		got := r.json(t)
		want := []any{
			"series[0] has 96 intervals, expected 92 for 2026-03-29",
			"series[1]: control area Amprion is not in the active set",
			"series[2]: no malo_mapping entry for MaLo '01234567890'",
		}
		if r.code != 422 || got["detail"] != want[0] || fmt.Sprint(got["errors"]) != fmt.Sprint(want) {
			t.Errorf("business: %d %s", r.code, r.body)
		}
		if r := f.as("data1", "GET", "/v1/forecasts/2026-03-29", nil); r.code != 404 {
			t.Errorf("rejected forecast stored: %d", r.code)
		}

		// Schema failures: a list of problems with loc as strings.
		r = f.as("data1", "POST", "/v1/forecasts", []byte(`{"delivery_day":"2026-03-29T00:00:00","series":[{"malo":1234567890,"kind":"both","values":[]}]}`))
		var schema struct {
			Detail []struct {
				Type string         `json:"type"`
				Loc  []string       `json:"loc"`
				Msg  string         `json:"msg"`
				Ctx  map[string]any `json:"ctx"`
			} `json:"detail"`
		}
		if err := json.Unmarshal(r.body, &schema); err != nil || r.code != 422 || len(schema.Detail) < 3 {
			t.Fatalf("schema: %d %s", r.code, r.body)
		}
		seen := map[string]string{}
		for _, p := range schema.Detail {
			seen[strings.Join(p.Loc, ".")] = p.Type
			if p.Ctx == nil {
				t.Errorf("problem without ctx: %+v", p)
			}
		}
		for loc, typ := range map[string]string{
			"body.delivery_day":  "date_parsing",
			"body.series.0.malo": "string_type",
			"body.series.0.kind": "literal_error",
		} {
			if seen[loc] != typ {
				t.Errorf("loc %s: type %q, want %q (all: %v)", loc, seen[loc], typ, seen)
			}
		}

		r = f.as("data1", "POST", "/v1/forecasts", []byte(`{"delivery_day": "2026-03-29", `))
		if r.code != 422 || !strings.Contains(string(r.body), `"json_invalid"`) {
			t.Errorf("malformed JSON: %d %s", r.code, r.body)
		}
		for _, path := range []string{"/v1/forecasts/2026-3-29", "/v1/forecasts/2026-03-29T00:00", "/v1/master-data/123", "/v1/submissions/xyz"} {
			if r := f.as("data1", "GET", path, nil); r.code != 422 || !strings.Contains(string(r.body), `"path"`) {
				t.Errorf("%s: %d %s", path, r.code, r.body)
			}
		}
	})
}

func TestOtherDataEndpoints(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		md := []byte(`{"locations":[
			{"malo":"01234567890","slices":[
				{"valid_from":"2026-01-01","valid_to":"2026-07-01","control_area":"TenneT","mga":"MGA1","metering_type":"slp","profile":"H25","annual_consumption_kwh":3500},
				{"valid_from":"2026-07-01","active":false}]},
			{"malo":"01234567891","delivery_start":"2026-02-01","control_area":"50Hertz","mga":"MGA2","metering_type":"rlm"}]}`)
		r := f.as("data1", "PUT", "/v1/master-data", md)
		if a := r.json(t); r.code != 200 || a["status"] != "created" || a["counts"].(map[string]any)["slices"] != 3.0 {
			t.Fatalf("master data: %d %s", r.code, r.body)
		}
		r = f.as("data1", "GET", "/v1/master-data/01234567891", nil)
		loc := r.json(t)
		slices := loc["slices"].([]any)
		if r.code != 200 || len(slices) != 1 || slices[0].(map[string]any)["valid_from"] != "2026-02-01" ||
			slices[0].(map[string]any)["metering_type"] != "rlm" {
			t.Errorf("flat form read back: %s", r.body)
		}
		if r := f.as("data1", "GET", "/v1/master-data/01234567899", nil); r.code != 404 {
			t.Errorf("unknown malo: %d", r.code)
		}
		r = f.as("data1", "PUT", "/v1/master-data", []byte(`{"locations":[{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","mga":"M"}]}]}`))
		if r.code != 422 || !strings.Contains(string(r.body), "Value error, an active slice needs control_area, mga and metering_type") {
			t.Errorf("incomplete slice: %d %s", r.code, r.body)
		}

		metered := []byte(fmt.Sprintf(`{"entries":[{"malo":"01234567890","day":"2026-10-25","unit":"KWH","values":%s},
			{"malo":"01234567890","day":"2026-10-26","unit":"KWH","values":%s}]}`, values(100, 2), values(96, 2)))
		r = f.as("data1", "POST", "/v1/metered-data", metered)
		if a := r.json(t); r.code != 200 || a["status"] != "created" || a["counts"].(map[string]any)["values"] != 196.0 {
			t.Errorf("metered: %d %s", r.code, r.body)
		}
		r = f.as("data1", "POST", "/v1/metered-data", metered)
		if a := r.json(t); a["status"] != "unchanged" || a["counts"].(map[string]any)["unchanged"] != 2.0 {
			t.Errorf("metered re-send: %s", r.body)
		}
		bad := []byte(fmt.Sprintf(`{"entries":[{"malo":"01234567890","day":"2026-03-29","unit":"MW","values":%s}]}`, values(96, 1)))
		if r := f.as("data1", "POST", "/v1/metered-data", bad); r.json(t)["detail"] != "entries[0] (01234567890, 2026-03-29): 96 intervals, expected 92" {
			t.Errorf("metered count: %s", r.body)
		}

		prof := []byte(fmt.Sprintf(`{"entries":[{"mga":"MGA1","profile":"H25","day":"2026-10-25","values_kwh":%s}]}`, values(96, 1)))
		if r := f.as("data1", "POST", "/v1/profiles", prof); r.json(t)["detail"] != "entries[0] (MGA1/H25, 2026-10-25): 96 intervals, expected 100" {
			t.Errorf("profile count: %s", r.body)
		}
		prof = []byte(fmt.Sprintf(`{"entries":[{"mga":"MGA1","profile":"H25","day":"2026-10-25","values_kwh":%s}]}`, values(100, 1)))
		if r := f.as("data1", "POST", "/v1/profiles", prof); r.code != 200 || r.json(t)["status"] != "created" {
			t.Errorf("profiles: %d %s", r.code, r.body)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{MaxBodyBytes: 256})
	body := forecast("2026-11-23", 96, 1.25, "")
	r := f.as("data1", "POST", "/v1/forecasts", body)
	if r.code != 413 || r.json(t)["detail"] != "request body exceeds the limit of 256 bytes; split the submission" {
		t.Errorf("declared length: %d %s", r.code, r.body)
	}
	// A chunked body announces no length; the reader still stops at the limit.
	req := httptest.NewRequest("POST", "/v1/forecasts", io.MultiReader(bytes.NewReader(body)))
	req.ContentLength = -1
	req.Header.Set("X-API-Key", f.keys["data1"])
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 413 {
		t.Errorf("chunked: %d %s", rec.Code, rec.Body)
	}
	if r := f.as("data1", "GET", "/v1/forecasts/2026-11-23", nil); r.code != 404 {
		t.Errorf("oversized body stored something: %d", r.code)
	}
}

func TestRateLimit(t *testing.T) {
	clock := now
	f := newFixture(t, sqldb.SQLite, api.Config{RatePerSecond: 1, RateBurst: 2, Now: func() time.Time { return clock }})
	for i, want := range []int{404, 404, 429} {
		r := f.as("data1", "GET", "/v1/forecasts/2026-11-23", nil)
		if r.code != want {
			t.Fatalf("request %d: %d, want %d", i, r.code, want)
		}
		if want == 429 && (r.header.Get("Retry-After") != "1" || !strings.HasPrefix(r.json(t)["detail"].(string), "rate limit")) {
			t.Errorf("429: Retry-After=%q %s", r.header.Get("Retry-After"), r.body)
		}
	}
	// Another key has its own bucket.
	if r := f.as("data2", "GET", "/v1/forecasts/2026-11-23", nil); r.code != 404 {
		t.Errorf("other key limited: %d", r.code)
	}
	clock = clock.Add(time.Second)
	if r := f.as("data1", "GET", "/v1/forecasts/2026-11-23", nil); r.code != 404 {
		t.Errorf("after refill: %d", r.code)
	}
}

func TestDrainAnswers503(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{RetryAfter: 7 * time.Second})
	f.srv.Drain()
	for _, path := range []string{"/health", "/v1/forecasts/2026-11-23"} {
		r := f.as("data1", "GET", path, nil)
		if r.code != 503 || r.header.Get("Retry-After") != "7" || !strings.Contains(r.json(t)["detail"].(string), "retry") {
			t.Errorf("%s: %d Retry-After=%q %s", path, r.code, r.header.Get("Retry-After"), r.body)
		}
	}
}

// TestHealthAndMetrics: /health reports the database; the requests are
// counted in the registry the binary serves on its metrics listener, and
// the API itself does not serve /metrics (404): whoever reaches the API
// must not read the schedules, the inbox's backlog and the leader flag.
func TestHealthAndMetrics(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			f := newFixture(t, d, api.Config{Registry: reg})
			if r := f.do("GET", "/health", nil); r.code != 200 || r.json(t)["status"] != "ok" || r.json(t)["database"] != "ok" {
				t.Errorf("health: %d %s", r.code, r.body)
			}
			f.as("data1", "GET", "/v1/forecasts/2026-11-23", nil)
			if r := f.do("GET", "/metrics", nil); r.code != 404 || strings.Contains(string(r.body), "schedbridge_") {
				t.Errorf("GET /metrics on the API: %d %s", r.code, r.body)
			}
			rec := httptest.NewRecorder()
			promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body := rec.Body.String()
			if !strings.Contains(body, `schedbridge_http_requests_total{code="404",method="GET",route="/v1/forecasts/:delivery_day"} 1`) {
				t.Errorf("metrics:\n%s", body)
			}
			if strings.Contains(body, f.keys["data1"]) {
				t.Error("metrics contain a key")
			}
			f.db.Close()
			if r := f.do("GET", "/health", nil); r.code != 503 || r.json(t)["database"] != "unreachable" {
				t.Errorf("health with closed db: %d %s", r.code, r.body)
			}
		})
	}
}

func TestUnknownRoute(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{})
	if r := f.do("GET", "/v2/nothing", nil); r.code != 404 || r.json(t)["detail"] != "Not Found" {
		t.Errorf("404: %d %s", r.code, r.body)
	}
	if r := f.as("data1", "DELETE", "/v1/forecasts", nil); r.code != 405 {
		t.Errorf("405: %d %s", r.code, r.body)
	}
}
