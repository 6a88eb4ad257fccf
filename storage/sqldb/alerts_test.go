package sqldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestAlerts: events of the named kinds, newest first, paged by id, with
// events of other kinds left out however many there are between them.
func TestAlerts(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		day := pipeline.NewDay(2026, 11, 27)
		kinds := []string{"run.started", "run.failed", "inbox.rejected", "run.started", "run.started", "inbox.rejected", "run.failed"}
		for i, k := range kinds {
			ev := pipeline.Event{At: t0.Add(time.Duration(i) * time.Minute), Kind: k, Subject: k, DeliveryDay: &day, Data: []byte(`{"n":1}`)}
			if err := db.RecordEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"run.failed", "inbox.rejected", "inbox.rejected", "run.failed"} // newest first
		var got []string
		before := int64(0)
		for page := 0; page < 10; page++ {
			evs, err := db.Alerts(ctx, []string{"run.failed", "inbox.rejected"}, before, 3)
			if err != nil {
				t.Fatal(err)
			}
			for i, ev := range evs {
				if i > 0 && ev.ID >= evs[i-1].ID {
					t.Fatalf("not newest first: %d after %d", ev.ID, evs[i-1].ID)
				}
				if ev.DeliveryDay == nil || *ev.DeliveryDay != day || string(ev.Data) != `{"n":1}` {
					t.Errorf("event %d read back as %+v", ev.ID, ev)
				}
				got = append(got, ev.Kind)
				before = ev.ID
			}
			if len(evs) < 3 {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("alerts %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("alerts %v, want %v", got, want)
			}
		}
	})
}

// TestLastEventID: 0 on an empty feed, then the id of the newest event,
// which the stream of a console page starts after.
func TestLastEventID(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if id, err := db.LastEventID(ctx); err != nil || id != 0 {
			t.Fatalf("empty feed: last id %d, %v; want 0", id, err)
		}
		for i := range 3 {
			if err := db.RecordEvent(ctx, pipeline.Event{At: t0.Add(time.Duration(i) * time.Minute), Kind: "run.started", Subject: "s"}); err != nil {
				t.Fatal(err)
			}
			evs, err := db.Events(ctx, pipeline.EventQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			id, err := db.LastEventID(ctx)
			if err != nil || id != evs[len(evs)-1].ID {
				t.Fatalf("after %d events: last id %d, %v; want %d", i+1, id, err, evs[len(evs)-1].ID)
			}
		}
	})
}
