package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// BulkStage stages one inbox file batch by batch in a single transaction, so
// that a file is staged completely or not at all however many entries it has.
// On SQLite the transaction holds the database's write lock until Commit or
// Rollback; API writers wait for it up to the busy timeout, then fail as
// Unavailable.
type BulkStage struct {
	db        *DB
	conn      bun.Conn
	tx        stageTx
	table     stagingTable
	portfolio string
	inputHash string
	now       time.Time
	res       pipeline.StageResult
	validated bool
	closed    bool
	checked   bool // whether add has looked for current versions yet
}

// BeginBulk starts staging a file of the given staging kind (forecast,
// location, metered, profile, trades) for a portfolio.
func (db *DB) BeginBulk(ctx context.Context, kind, portfolio, inputHash string, now time.Time) (*BulkStage, error) {
	t, ok := stagingKinds[kind]
	if !ok {
		return nil, pipeline.Errorf(pipeline.Invalid, "unknown staging kind %q", kind)
	}
	// A connection of its own: COPY needs the driver's connection, and it must
	// be the one the transaction runs on.
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin bulk %s: %w", kind, err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("begin bulk %s: %w", kind, err)
	}
	s := &BulkStage{db: db, conn: conn, tx: stageTx{tx: tx, stmts: stmtCache{}},
		table: t, portfolio: portfolio, inputHash: inputHash, now: now}
	if db.dialect == Postgres {
		s.tx.copy = s.copyFrom
	}
	return s, nil
}

// copyFrom runs COPY on the transaction's connection. pgx sends the rows in
// its binary format: no statement per chunk, and the values column travels as
// raw bytes.
func (s *BulkStage) copyFrom(ctx context.Context, table string, cols []string, rows [][]any) error {
	return s.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection %T does not speak COPY", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		return err
	})
}

func (s *BulkStage) add(ctx context.Context, items []stageItem) error {
	if s.closed {
		return pipeline.Errorf(pipeline.Conflict, "bulk stage already finished")
	}
	if !s.checked {
		none, err := s.noCurrent(ctx)
		if err != nil {
			return fmt.Errorf("bulk stage %s: %w", s.table.name, err)
		}
		s.tx.noCurrent, s.checked = none, true
	}
	r, err := s.db.stage(ctx, s.tx, s.table, s.portfolio, s.inputHash, s.now, items)
	if err != nil {
		return fmt.Errorf("bulk stage %s: %w", s.table.name, err)
	}
	s.res.Created += r.Created
	s.res.Replaced += r.Replaced
	s.res.Unchanged += r.Unchanged
	s.res.Version = max(s.res.Version, r.Version)
	return nil
}

// noCurrent tells whether the portfolio has no current version in the
// table, under the table's write lock, which the transaction holds from then
// until it ends: on SQLite the immediate transaction holds the database's
// write lock since BEGIN, on PostgreSQL the advisory lock that every staging
// write of the portfolio and table takes (stage). No other writer can then
// add a current version, so a file that starts on such a table (a first
// load, or the first file of a portfolio) skips the lookup of the current
// versions of its keys: it would find only keys written by earlier batches of
// this file, and the decoder rejects a file that repeats a key, while the
// partial unique index of current rows would refuse such a key anyway and
// fail the transaction. The lookup took about a tenth of the staging time of
// the inbox benchmark's file on either backend.
func (s *BulkStage) noCurrent(ctx context.Context) (bool, error) {
	if s.db.dialect == Postgres {
		if _, err := s.tx.tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
			s.portfolio+"/"+s.table.name); err != nil {
			return false, err
		}
	}
	var exists bool
	err := s.tx.tx.QueryRowContext(ctx, fmt.Sprintf(
		"SELECT EXISTS (SELECT 1 FROM %s WHERE portfolio_id = ? AND superseded_at IS NULL)", s.table.name),
		s.portfolio).Scan(&exists)
	return !exists, err
}

// Metered stages a batch of metered days.
func (s *BulkStage) Metered(ctx context.Context, entries []pipeline.MeteredEntry) error {
	return s.add(ctx, meteredItems(entries))
}

// PrepareMetered does the part of Metered that needs no database (hashing
// and encoding the values, about a tenth of the work of staging a batch on
// SQLite) and returns the write that remains, so that a caller that decodes
// on one goroutine and writes on another can do this part on the first
// (the inbox does: ingest/inbox stageOverlapped).
func (s *BulkStage) PrepareMetered(entries []pipeline.MeteredEntry) func(context.Context) error {
	items := meteredItems(entries)
	return func(ctx context.Context) error { return s.add(ctx, items) }
}

// PrepareProfiles is PrepareMetered for profile days.
func (s *BulkStage) PrepareProfiles(entries []pipeline.ProfileEntry) func(context.Context) error {
	items := profileItems(entries)
	return func(ctx context.Context) error { return s.add(ctx, items) }
}

// Profiles stages a batch of profile days.
func (s *BulkStage) Profiles(ctx context.Context, entries []pipeline.ProfileEntry) error {
	return s.add(ctx, profileItems(entries))
}

// Locations stages a batch of market locations' master data.
func (s *BulkStage) Locations(ctx context.Context, locs []pipeline.Location) error {
	items, err := locationItems(locs)
	if err != nil {
		return err
	}
	return s.add(ctx, items)
}

// Forecast stages a forecast with its canonical body.
func (s *BulkStage) Forecast(ctx context.Context, f pipeline.Forecast, canonical []byte) error {
	return s.add(ctx, forecastItems(f, canonical))
}

// ValidateOnly makes Commit record the file as validated: a file that asked
// for validation only stages nothing but still gets its receipt.
func (s *BulkStage) ValidateOnly() { s.validated = true }

// Commit records the audit entry and marks the inbox file staged with its
// receipt in the staging transaction, then commits. The file must still be
// claimed by owner; otherwise nothing is committed and the error is a
// Conflict, so a processor whose lease ran out can never stage a file that
// its successor stages too.
func (s *BulkStage) Commit(ctx context.Context, fileID int64, owner, dest string, a *pipeline.AuditEntry,
	receipt func(pipeline.StageResult) ([]byte, error)) (pipeline.StageResult, error) {
	if s.closed {
		return s.res, pipeline.Errorf(pipeline.Conflict, "bulk stage already finished")
	}
	s.closed = true
	defer s.conn.Close()
	defer s.tx.tx.Rollback() //nolint:errcheck // no-op after a commit
	s.res.Tally()
	if s.validated {
		s.res.Status = pipeline.Validated
	}
	doc, err := receipt(s.res)
	if err != nil {
		return s.res, err
	}
	res, err := s.tx.tx.NewUpdate().Model((*inboxRow)(nil)).
		Set("state = ?", string(pipeline.InboxStaged)).Set("input_hash = ?", s.inputHash).
		Set("status = ?", string(s.res.Status)).Set("dest_key = ?", dest).Set("result = ?", string(doc)).
		Where("id = ?", fileID).Where("owner = ?", owner).Where("state = ?", string(pipeline.InboxProcessing)).
		Exec(ctx)
	if err != nil {
		return s.res, fmt.Errorf("mark inbox file %d staged: %w", fileID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.res, errLostClaim(fileID)
	}
	entry := *a
	entry.Outcome = string(s.res.Status)
	if err := s.db.insertAudit(ctx, s.tx.tx, &entry); err != nil {
		return s.res, err
	}
	if err := s.tx.tx.Commit(); err != nil {
		return s.res, fmt.Errorf("commit bulk %s: %w", s.table.name, err)
	}
	*a = entry
	return s.res, nil
}

// Rollback abandons the staging; safe to call after Commit.
func (s *BulkStage) Rollback() {
	if !s.closed {
		s.closed = true
		_ = s.tx.tx.Rollback()
		_ = s.conn.Close()
	}
}

func meteredItems(entries []pipeline.MeteredEntry) []stageItem {
	vals := packValues(len(entries), func(i int) []float64 { return entries[i].Values })
	items := make([]stageItem, len(entries))
	for i, e := range entries {
		items[i] = stageItem{
			key:  []string{e.Malo, e.Day.String()},
			hash: contentHash([]byte(e.Unit), vals[i]), payload: []any{string(e.Unit), vals[i]},
		}
	}
	return items
}

func profileItems(entries []pipeline.ProfileEntry) []stageItem {
	vals := packValues(len(entries), func(i int) []float64 { return entries[i].ValuesKWh })
	items := make([]stageItem, len(entries))
	for i, e := range entries {
		items[i] = stageItem{key: []string{e.MGA, e.Profile, e.Day.String()}, hash: contentHash(vals[i]), payload: []any{vals[i]}}
	}
	return items
}

// packValues encodes the values of n entries in their stored form, all in
// one buffer: one allocation per batch instead of one per entry.
func packValues(n int, values func(int) []float64) [][]byte {
	total := 0
	for i := range n {
		total += 8 * len(values(i))
	}
	buf := make([]byte, 0, total)
	out := make([][]byte, n)
	for i := range n {
		start := len(buf)
		buf = appendValues(buf, values(i))
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

func locationItems(locs []pipeline.Location) ([]stageItem, error) {
	items := make([]stageItem, len(locs))
	for i, l := range locs {
		b, err := json.Marshal(l.Slices)
		if err != nil {
			return nil, err
		}
		items[i] = stageItem{key: []string{l.Malo}, hash: contentHash(b), payload: []any{string(b)}}
	}
	return items, nil
}

func forecastItems(f pipeline.Forecast, canonical []byte) []stageItem {
	return []stageItem{{
		key: []string{f.DeliveryDay.String()}, hash: contentHash(canonical), payload: []any{string(canonical)},
	}}
}
