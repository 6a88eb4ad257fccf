package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestCheckSchema pins what the readiness probe learns from the migration
// table: a database that was never migrated or lacks migrations is not ready
// (Unavailable, naming the first pending one), a current one is, and so is
// one that a newer release has expanded with a migration this binary does
// not know, because during a rolling upgrade the old replicas keep serving.
func TestCheckSchema(t *testing.T) {
	cases := []struct {
		name string
		// prepare brings a fresh, unmigrated database into the state.
		prepare func(t *testing.T, db *sqldb.DB)
		// want is a fragment of the error, "" for ready.
		want string
	}{
		{"never migrated", func(t *testing.T, db *sqldb.DB) {}, "cannot read the applied migrations"},
		{"first migration only", func(t *testing.T, db *sqldb.DB) {
			if err := sqldb.MigrateThrough(context.Background(), db, "20261122000001"); err != nil {
				t.Fatal(err)
			}
		}, "pending, the first is 20261122000002"},
		{"all but the last", func(t *testing.T, db *sqldb.DB) {
			migrate(t, db)
			if _, err := sqldb.RollbackLast(context.Background(), db); err != nil {
				t.Fatal(err)
			}
		}, "pending"},
		{"current", migrate, ""},
		{"expanded by a newer release", func(t *testing.T, db *sqldb.DB) {
			migrate(t, db)
			if err := sqldb.Exec(context.Background(), db,
				"INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, ?, ?)", "29991231000001_future", 999, t0); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					db := sqltest.OpenUnmigrated(t, d)
					tc.prepare(t, db)
					err := db.CheckSchema(context.Background())
					switch {
					case tc.want == "" && err != nil:
						t.Fatalf("CheckSchema: %v, want ready", err)
					case tc.want == "":
					case err == nil:
						t.Fatalf("CheckSchema: ready, want %q", tc.want)
					case pipeline.KindOf(err) != pipeline.Unavailable || !strings.Contains(err.Error(), tc.want):
						t.Fatalf("CheckSchema: %v (kind %v), want Unavailable with %q", err, pipeline.KindOf(err), tc.want)
					}
				})
			}
		})
	}
}

func migrate(t *testing.T, db *sqldb.DB) {
	t.Helper()
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
}
