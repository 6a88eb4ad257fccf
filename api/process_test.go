package api_test

import (
	"context"
	"encoding/json"
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

func TestBucketWebhook(t *testing.T) {
	f := newFixture(t, "sqlite", api.Config{WebhookTokenHash: pipeline.HashKey("hook-secret")})
	if r := f.do("POST", "/v1/inbox/events", []byte(`{"Records":[]}`)); r.code != 401 || f.wakes.n.Load() != 0 {
		t.Errorf("without token: %d, wakes %d", r.code, f.wakes.n.Load())
	}
	if r := f.do("POST", "/v1/inbox/events", []byte(`{"Records":[]}`), "Authorization", "Bearer hook-secret"); r.code != 204 || f.wakes.n.Load() != 1 {
		t.Errorf("with token: %d, wakes %d", r.code, f.wakes.n.Load())
	}
}
