package sqldb

import (
	"context"
	"fmt"
	"os"

	"github.com/schedbridge/schedbridge/pipeline"
)

// BackupSQLite writes a consistent copy of the embedded SQLite database to
// path with SQLite's VACUUM INTO, which reads in one transaction and so
// runs while the service serves: writers wait at most for the copy's
// commit, and the copy holds every transaction committed before it began.
// path must not exist yet. PostgreSQL has tools of its own
// (pg_basebackup, pg_dump) and is refused.
func (db *DB) BackupSQLite(ctx context.Context, path string) error {
	if db.dialect != SQLite {
		return pipeline.Errorf(pipeline.Invalid, "backup: the database is PostgreSQL; back it up with pg_basebackup or pg_dump (docs/operations.md)")
	}
	if _, err := os.Lstat(path); err == nil {
		return pipeline.Errorf(pipeline.Conflict, "backup: %s exists already", path)
	}
	if _, err := db.bun.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("backup: VACUUM INTO %s: %w", path, err)
	}
	return nil
}
