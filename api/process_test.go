package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/pipeline"
)

func TestInboxReportAndEvents(t *testing.T) {
	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		for _, key := range []string{"inbox/p1/metered-data/wait.csv", "inbox/p1/metered-data/busy.csv", "inbox/p2/profiles/x.csv"} {
			if err := f.bucket.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
				t.Fatal(err)
			}
		}
		busy := pipeline.InboxFile{Key: "inbox/p1/metered-data/busy.csv", ETag: "e", Size: 1, PortfolioID: "p1", Kind: "metered-data", Name: "busy.csv"}
		if _, ok, err := f.db.ClaimInboxFile(ctx, busy, "worker-1", now, time.Minute); err != nil || !ok {
			t.Fatal(err)
		}
		bad := pipeline.InboxFile{Key: "inbox/p1/metered-data/bad.csv", ETag: "e", Size: 1, PortfolioID: "p1", Kind: "metered-data", Name: "bad.csv"}
		claim, _, err := f.db.ClaimInboxFile(ctx, bad, "worker-1", now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.db.MarkInboxRejected(ctx, claim.ID, "worker-1", "3 problem(s) found", "rejected/p1/bad.csv", []byte(`{"error_count":3,"errors":[]}`)); err != nil {
			t.Fatal(err)
		}
		ev := pipeline.Event{At: now, Kind: "inbox.rejected", PortfolioID: "p1", Subject: bad.Key, Data: json.RawMessage(`{"reason":"3 problem(s) found"}`)}
		if err := f.db.FinishInboxFile(ctx, claim.ID, "worker-1", now, ev); err != nil {
			t.Fatal(err)
		}

		r := f.as("process", "GET", "/v1/process/inbox", nil)
		if r.code != 200 {
			t.Fatalf("inbox report: %d %s", r.code, r.body)
		}
		var rep api.InboxReport
		if err := json.Unmarshal(r.body, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Pending) != 2 || rep.Pending[0].Key != "inbox/p1/metered-data/wait.csv" || rep.Pending[0].Kind != "metered-data" {
			t.Errorf("pending = %+v", rep.Pending)
		}
		if len(rep.Processing) != 1 || rep.Processing[0].Owner != "worker-1" {
			t.Errorf("processing = %+v", rep.Processing)
		}
		if len(rep.Rejected) != 1 || rep.Rejected[0].Reason != "3 problem(s) found" || rep.Rejected[0].ErrorCount == nil ||
			*rep.Rejected[0].ErrorCount != 3 || rep.Rejected[0].Document != "rejected/p1/bad.csv.errors.json" {
			t.Errorf("rejected = %+v", rep.Rejected)
		}
		if r := f.as("process", "GET", "/v1/process/inbox?portfolio=p2", nil); !strings.Contains(string(r.body), "inbox/p2/profiles/x.csv") ||
			strings.Contains(string(r.body), "p1/") {
			t.Errorf("portfolio filter: %s", r.body)
		}
		if r := f.as("process", "GET", "/v1/process/inbox?limit=1", nil); r.code != 200 || !strings.Contains(string(r.body), `"pending_truncated":true`) {
			t.Errorf("limit 1: %s", r.body)
		}
		r = f.as("process", "GET", "/v1/process/inbox?limit=abc", nil)
		if r.code != 422 || !strings.Contains(string(r.body), `"loc":["query","limit"]`) || !strings.Contains(string(r.body), `"type":"int_parsing"`) {
			t.Errorf("bad limit: %d %s", r.code, r.body)
		}
		if r := f.as("data1", "GET", "/v1/process/inbox", nil); r.code != 403 {
			t.Errorf("data key on the process route: %d", r.code)
		}
		if r := f.do("GET", "/v1/process/inbox", nil); r.code != 401 {
			t.Errorf("no key: %d", r.code)
		}

		r = f.as("process", "GET", "/v1/console/events?kind=inbox.*", nil)
		var evs []pipeline.Event
		if err := json.Unmarshal(r.body, &evs); err != nil || r.code != 200 || len(evs) != 1 || evs[0].Kind != "inbox.rejected" {
			t.Fatalf("events: %d %s", r.code, r.body)
		}
		if r := f.as("process", "GET", "/v1/console/events?after="+jsonInt(evs[0].ID), nil); string(r.body) != "[]" {
			t.Errorf("events after the last: %s", r.body)
		}
		if r := f.as("process", "GET", "/v1/console/events?limit=0", nil); r.code != 422 || !strings.Contains(string(r.body), "greater_than_equal") {
			t.Errorf("limit 0: %d %s", r.code, r.body)
		}
	})
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// The bucket webhook is off unless a token is configured or it is opened
// explicitly, and takes small bodies only; a refused request wakes nothing.
func TestBucketWebhook(t *testing.T) {
	const limit = 64 << 10
	event := []byte(`{"Records":[]}`)
	tokenCfg := api.Config{WebhookTokenHash: pipeline.HashKey("hook-secret")}
	openCfg := api.Config{WebhookOpen: true}
	tests := []struct {
		name    string
		cfg     api.Config
		auth    string
		body    []byte
		chunked bool // no Content-Length, as a sender streaming its body
		want    int
		detail  string
	}{
		{"off", api.Config{}, "", event, false, 404, "bucket notifications are off: configure inbox.webhook_token"},
		{"off with a token", api.Config{}, "Bearer hook-secret", event, false, 404, "bucket notifications are off: configure inbox.webhook_token"},
		{"token missing", tokenCfg, "", event, false, 401, "missing or wrong webhook token"},
		{"token wrong", tokenCfg, "Bearer other", event, false, 401, "missing or wrong webhook token"},
		{"token right", tokenCfg, "Bearer hook-secret", event, false, 204, ""},
		{"token right, body at the limit", tokenCfg, "Bearer hook-secret", bytes.Repeat([]byte(" "), limit), false, 204, ""},
		{"token right, body too large", tokenCfg, "Bearer hook-secret", bytes.Repeat([]byte(" "), limit+1), false, 413,
			"request body exceeds the limit of 65536 bytes; send one event per request"},
		{"open", openCfg, "", event, false, 204, ""},
		{"open, body too large", openCfg, "", bytes.Repeat([]byte(" "), limit+1), false, 413,
			"request body exceeds the limit of 65536 bytes; send one event per request"},
		{"open, chunked body too large", openCfg, "", bytes.Repeat([]byte(" "), limit+1), true, 413,
			"request body exceeds the limit of 65536 bytes; send one event per request"},
	}
	f := newFixture(t, "sqlite", api.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wakes := &wakeCounter{}
			deps := f.deps
			deps.Waker = wakes
			tt.cfg.Logger = slog.New(slog.DiscardHandler)
			srv := api.New(tt.cfg, deps)
			req := httptest.NewRequest("POST", "/v1/inbox/events", bytes.NewReader(tt.body))
			if tt.chunked {
				req.ContentLength = -1
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			wantWakes := int64(0)
			if tt.want == 204 {
				wantWakes = 1
			}
			if rec.Code != tt.want || wakes.n.Load() != wantWakes {
				t.Fatalf("%d (%s), wakes %d; want %d, wakes %d", rec.Code, rec.Body, wakes.n.Load(), tt.want, wantWakes)
			}
			if tt.detail != "" {
				if got := (response{body: rec.Body.Bytes()}).json(t)["detail"]; got != tt.detail {
					t.Errorf("detail %q, want %q", got, tt.detail)
				}
			}
		})
	}
}
