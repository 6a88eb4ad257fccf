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
				// The trail gained the operator column later (20261201000002),
				// which today's code writes and reads; at this schema the
				// entry is written and read as the code of the time did.
				if err := sqldb.Exec(ctx, db, "INSERT INTO audit_entries (received_at, endpoint, outcome, status_code, request_id) VALUES (?, 'GET /v1/new', 'ok', 200, 'req-new')", t0); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				newest, err := sqldb.QueryString(ctx, db, "SELECT request_id FROM audit_entries ORDER BY id DESC LIMIT 1")
				if err != nil || newest != "req-new" {
					t.Fatalf("round %d: newest request_id = %q, %v", round, newest, err)
				}
				n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM audit_entries")
				if err != nil || n != fmt.Sprint(round+2) {
					t.Fatalf("round %d: %s entries, %v; want %d", round, n, err, round+2)
				}
				oldest, err := sqldb.QueryString(ctx, db, "SELECT COALESCE(request_id, '') FROM audit_entries ORDER BY id LIMIT 1")
				if err != nil || oldest != "" {
					t.Fatalf("round %d: the entry from before the migration has request_id %q, %v", round, oldest, err)
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
