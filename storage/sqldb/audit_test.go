package sqldb_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestAuditRequestID stores the request id with an audit entry, whether the
// entry is recorded alone or with what a submission staged.
func TestAuditRequestID(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		a := audit("p1", "h1")
		a.RequestID, a.Outcome = "req-recorded", "rejected"
		if err := db.RecordAudit(ctx, a); err != nil {
			t.Fatal(err)
		}
		b := audit("p1", "h1")
		b.RequestID = "req-staged"
		if _, err := db.StageLocations(ctx, b, []pipeline.Location{location("01234567890", "MGA1", 1000)}); err != nil {
			t.Fatal(err)
		}
		none := audit("p1", "h1")
		if err := db.RecordAudit(ctx, none); err != nil {
			t.Fatal(err)
		}
		entries, err := db.AuditByHash(ctx, "p1", "h1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.RequestID)
		}
		if want := []string{"req-recorded", "req-staged", ""}; !slices.Equal(got, want) {
			t.Errorf("request ids = %q, want %q", got, want)
		}
	})
}

// TestRequestIDMigrationDownUp adds the audit trail's request_id column to
// a trail with entries, and takes it away again.
func TestRequestIDMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261128000006"); err != nil {
				t.Fatal(err)
			}
			if err := sqldb.Exec(ctx, db, "INSERT INTO audit_entries (received_at, endpoint, outcome, status_code) VALUES (?, 'GET /v1/old', 'ok', 200)", t0); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := sqldb.MigrateThrough(ctx, db, "20261129000001"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				a := &pipeline.AuditEntry{ReceivedAt: t0, Endpoint: "GET /v1/new", Outcome: "ok", StatusCode: 200, RequestID: "req-new"}
				if err := db.RecordAudit(ctx, a); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				entries, err := db.RecentAudit(ctx, 10)
				if err != nil || len(entries) != round+2 || entries[0].RequestID != "req-new" || entries[len(entries)-1].RequestID != "" {
					t.Fatalf("round %d: entries = %+v, %v", round, entries, err)
				}
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261129000001"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				if _, err := sqldb.QueryString(ctx, db, "SELECT COUNT(request_id) FROM audit_entries"); err == nil {
					t.Errorf("round %d: request_id still there after the rollback", round)
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM audit_entries"); err != nil || n != fmt.Sprint(round+2) {
					t.Errorf("round %d: entries after the rollback = %s, %v", round, n, err)
				}
			}
		})
	}
}
