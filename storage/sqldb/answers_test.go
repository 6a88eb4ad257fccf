package sqldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestAnswerIntake: an answer file's claim moves to staged only for its
// owner, and a header-only anomaly report finds its schedule by file name.
func TestAnswerIntake(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		f, ok, err := db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: "inbox/tso/a.xml", ETag: "e1", Size: 10}, "A", t0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if err := db.MarkInboxStaged(ctx, f.ID, "B", "processed/tso/x", "anomaly", []byte("{}")); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("another owner: %v", err)
		}
		if err := db.MarkInboxStaged(ctx, f.ID, "A", "processed/tso/x", "anomaly", []byte(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
		open, err := db.OpenInboxFiles(ctx)
		if err != nil || len(open) != 1 || open[0].State != pipeline.InboxStaged || open[0].DestKey != "processed/tso/x" {
			t.Fatalf("open files %+v, %v", open, err)
		}
		if err := db.MarkInboxStaged(ctx, f.ID, "A", "processed/tso/x", "anomaly", nil); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("second mark: %v", err)
		}

		day := pipeline.NewDay(2026, 11, 24)
		m := pipeline.ScheduleMessage{PortfolioID: "p1", Day: day, ControlArea: pipeline.TenneT, MessageID: "SB-1", Version: 1,
			FileName: "20261124_TPS_11XSBTEST-BKV--A_10XDE-EON-NETZ-C_001.XML", ObjectKey: "outbox/fahrplan/x", ContentHash: "h1",
			Sender: "11XSBTEST-BKV--A", Receiver: "10XDE-EON-NETZ-C", RunID: 1, Status: pipeline.ScheduleSubmitted, SentAt: t0}
		rec, created, err := db.RecordSchedule(ctx, m)
		if err != nil || !created {
			t.Fatalf("record: %v %v", created, err)
		}
		got, err := db.ScheduleByFileName(ctx, "20261124_TPS_11XSBTEST-BKV--A_10XDE-EON-NETZ-C_001.xml")
		if err != nil || got.ID != rec.ID {
			t.Errorf("by file name: %+v, %v", got, err)
		}
		if _, err := db.ScheduleByFileName(ctx, "20261124_TPS_11XSBTEST-BKV--A_10XDE-EON-NETZ-C_002.XML"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("unknown file: %v", err)
		}
	})
}
