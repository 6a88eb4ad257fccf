package sqldb

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun/migrate"

	"github.com/schedbridge/schedbridge/pipeline"
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

// ExplainRuns returns the plan of the query that Runs sends for q: the
// lines of PostgreSQL's EXPLAIN or the details of SQLite's EXPLAIN QUERY PLAN.
func ExplainRuns(ctx context.Context, db *DB, q pipeline.RunQuery) (string, error) {
	var rows []runRow
	return db.explain(ctx, db.runsQuery(q, &rows).String())
}

// ForgetMakoFacts drops the market-partner facts that MakoFacts keeps, as a
// write of another process would make it do, so that the next call reads
// them in full.
func ForgetMakoFacts(db *DB) {
	db.makoFacts.mu.Lock()
	defer db.makoFacts.mu.Unlock()
	db.makoFacts.facts = nil
}

// MakoLatestDrift lists the mako_edi_latest entries whose copy of their
// message's columns differs from the message and its file, or whose message
// is gone.
func MakoLatestDrift(ctx context.Context, db *DB) ([]string, error) {
	var rows []struct {
		Partner string `bun:"partner_mp_id"`
		Stream  string `bun:"stream"`
	}
	err := db.bun.NewRaw("SELECT l.partner_mp_id, l.stream FROM mako_edi_latest l "+
		"LEFT JOIN mako_edi_messages m ON m.id = l.message_id LEFT JOIN mako_edi_files f ON f.id = m.file_id "+
		"WHERE m.id IS NULL OR l.object_key <> f.object_key OR l.direction <> m.direction OR l.type <> m.type "+
		"OR l.process_id <> m.process_id OR l.bgm <> m.bgm OR l.document_no <> m.document_no "+
		"OR l.interchange_ref <> m.interchange_ref OR l.message_ref <> m.message_ref OR l.message_stream <> m.stream "+
		"OR l.verdict <> m.verdict OR l.at <> m.at OR l.partner_mp_id <> m.partner_mp_id "+
		"OR (l.answered_at IS NULL) <> (m.answered_at IS NULL) OR l.answered_at <> m.answered_at").Scan(ctx, &rows)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Partner + "/" + r.Stream
	}
	return out, err
}

// ExplainEvents returns the plan of the query that Events sends for q.
func ExplainEvents(ctx context.Context, db *DB, q pipeline.EventQuery) (string, error) {
	var rows []eventRow
	return db.explain(ctx, db.eventsQuery(q, &rows).String())
}

// ExplainLastSuccesses returns the plan of the query of LastSuccesses.
func ExplainLastSuccesses(ctx context.Context, db *DB) (string, error) {
	return db.explain(ctx, db.lastSuccessesQuery().String())
}

func (db *DB) explain(ctx context.Context, q string) (string, error) {
	prefix, col := "EXPLAIN ", 0
	if db.dialect == SQLite {
		// Its rows are id, parent, notused and detail.
		prefix, col = "EXPLAIN QUERY PLAN ", 3
	}
	rows, err := db.bun.DB.QueryContext(ctx, prefix+q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(any)
		}
		if err := rows.Scan(vals...); err != nil {
			return "", err
		}
		v := *vals[col].(*any)
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		plan = append(plan, fmt.Sprint(v))
	}
	return strings.Join(plan, "\n"), rows.Err()
}

// ExplainIsOperator returns the plan of the lookup of IsOperator.
func ExplainIsOperator(ctx context.Context, db *DB, email string) (string, error) {
	return db.explain(ctx, db.isOperatorQuery(email).String())
}

// ContentHash is contentHash, for tests that write rows as an older schema
// held them.
func ContentHash(parts ...[]byte) string { return contentHash(parts...) }

// GroupCommitStats returns how many requests entered a group commit queue
// and how many transactions were begun for them.
func GroupCommitStats(db *DB) (queued, transactions int64) {
	return db.groups.queued.Load(), db.groups.transactions.Load()
}

// MaxGroupWriters is how many group transactions of one table run at once.
const MaxGroupWriters = maxGroupWriters
