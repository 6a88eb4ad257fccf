package sqldb

import (
	"context"
	"strings"

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

// ExplainCurrentLookup returns PostgreSQL's plan of the current-version
// lookup for the given metered keys (malo, day pairs).
func ExplainCurrentLookup(ctx context.Context, db *DB, portfolio string, keys [][2]string) (string, error) {
	items := make([]stageItem, len(keys))
	for i, k := range keys {
		items[i] = stageItem{key: []string{k[0], k[1]}}
	}
	q, args := db.currentQuery(meteredTable, portfolio, items)
	rows, err := db.bun.DB.QueryContext(ctx, "EXPLAIN "+db.rebind(q), args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n"), rows.Err()
}

// RollbackLast reverts the last group of applied migrations.
func RollbackLast(ctx context.Context, db *DB) ([]string, error) {
	group, err := db.migrator().Rollback(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range group.Migrations {
		names = append(names, m.Name)
	}
	return names, nil
}

// QueryString runs a query that returns one text value.
func QueryString(ctx context.Context, db *DB, q string, args ...any) (string, error) {
	var s string
	err := db.bun.QueryRowContext(ctx, q, args...).Scan(&s)
	return s, err
}

// ExecForTest runs a statement on the pool, for tests that must act on the
// server behind the repository's back (ending a session, say).
func ExecForTest(ctx context.Context, db *DB, q string, args ...any) error {
	_, err := db.bun.ExecContext(ctx, q, args...)
	return err
}
