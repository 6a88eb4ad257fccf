package sqldb

import (
	"context"

	"github.com/uptrace/bun/migrate"
)

// MigrateThrough applies the migrations up to and including the one named
// last, so that a test can fill the schema a later migration converts.
func MigrateThrough(ctx context.Context, db *DB, last string) error {
	ms := migrate.NewMigrations()
	for _, m := range allMigrations().Sorted() {
		if m.Name <= last {
			ms.Add(m)
		}
	}
	m := db.migratorOf(ms)
	if err := m.Init(ctx); err != nil {
		return err
	}
	_, err := m.Migrate(ctx)
	return err
}

// Exec runs a raw statement with bun's placeholders.
func Exec(ctx context.Context, db *DB, q string, args ...any) error {
	_, err := db.bun.ExecContext(ctx, q, args...)
	return err
}
