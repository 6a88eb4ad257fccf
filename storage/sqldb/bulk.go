package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
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
//
// The file's input hash is known only once the whole file is read, at
// Commit. Metered and profile days are written as they come, naming the
// file's staging_inputs row, which Commit gives the hash; the other kinds
// (a master-data, forecast or trades file is one batch, read whole) are kept
// until Commit and written with the hash there.
type BulkStage struct {
	db        *DB
	conn      bun.Conn
	tx        stageTx
	table     stagingTable
	portfolio string
	now       time.Time
	res       pipeline.StageResult
	validated bool
	closed    bool
	checked   bool        // whether add has looked for current versions yet
	inputID   int64       // the file's staging_inputs row, once a batch is written
	deferred  []stageItem // the items of a table without input_id, for Commit
	stream    *copyStream // the COPY of a first load on PostgreSQL, once started
	failed    error       // why a batch failed, after which nothing is written
}

// BeginBulk starts staging a file of the given staging kind (forecast,
// location, metered, profile, trades) for a portfolio. now is the versions'
// received_at.
func (db *DB) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (*BulkStage, error) {
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
	if db.dialect == SQLite {
		for _, q := range bulkPragmas {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				releaseConn(db, conn, false)
				return nil, fmt.Errorf("begin bulk %s: %w", kind, err)
			}
		}
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		releaseConn(db, conn, false)
		return nil, fmt.Errorf("begin bulk %s: %w", kind, err)
	}
	s := &BulkStage{db: db, conn: conn, tx: stageTx{tx: tx, stmts: stmtCache{}},
		table: t, portfolio: portfolio, now: now}
	if db.dialect == Postgres {
		s.tx.copy = s.copyFrom
	}
	return s, nil
}

// copyFrom writes rows with COPY on the transaction's connection. pgx sends
// the rows in its binary format: no statement per chunk, and the values
// column travels as raw bytes.
//
// A file that found no current version in its table (noCurrent: a first
// load) runs no other statement until Commit, so all its batches go into
// one COPY, which runs from the first batch to Commit (copyStream). A COPY
// per batch of 2,000 days cost a round trip for the column types, one to
// start and one to end it, and left the server idle in between: the inbox
// benchmark's file took 17 s to read and stage that way, and 15 s with
// batches of 8,000 (docs/benchmarks.md, issue 20).
func (s *BulkStage) copyFrom(ctx context.Context, table string, cols []string, rows [][]any) error {
	if s.tx.noCurrent {
		if s.stream == nil {
			s.stream = s.startStream(table, cols)
		}
		return s.stream.send(rows)
	}
	return s.copyNow(ctx, table, cols, pgx.CopyFromRows(rows))
}

// copyNow runs one COPY of the rows src yields.
func (s *BulkStage) copyNow(ctx context.Context, table string, cols []string, src pgx.CopyFromSource) error {
	return s.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection %T does not speak COPY", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, src)
		return err
	})
}

// copyStream is a COPY that runs on its own goroutine while the batches of
// a file arrive: each batch's rows are sent to it, and end waits for it.
type copyStream struct {
	rows chan [][]any
	stop chan struct{} // closed to abort the COPY
	done chan error
	err  error // the COPY's result, once done has delivered it
	over bool  // whether done has delivered
}

// startStream starts one COPY into table that takes the rows sent to the
// stream until it ends. The COPY outlives the context of the batch that
// starts it (the inbox cancels that when the file is read); abort ends it.
func (s *BulkStage) startStream(table string, cols []string) *copyStream {
	cs := &copyStream{rows: make(chan [][]any, 2), stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		cs.done <- s.copyNow(context.Background(), table, cols, &streamSource{cs: cs})
	}()
	return cs
}

// send hands the COPY a batch of rows; it fails once the COPY has.
func (cs *copyStream) send(rows [][]any) error {
	if cs.over {
		return errors.Join(errors.New("copy ended early"), cs.err)
	}
	select {
	case cs.rows <- rows:
		return nil
	case err := <-cs.done:
		cs.err, cs.over = err, true
		if err == nil {
			err = errors.New("copy ended early")
		}
		return err
	}
}

// end closes the COPY after the last batch and returns its result.
func (cs *copyStream) end() error {
	if !cs.over {
		close(cs.rows)
		cs.err, cs.over = <-cs.done, true
	}
	return cs.err
}

// abort stops the COPY, which fails, and waits for it.
func (cs *copyStream) abort() {
	if !cs.over {
		close(cs.stop)
		cs.err, cs.over = <-cs.done, true
	}
}

var errCopyAborted = errors.New("bulk stage abandoned")

// streamSource is the pgx.CopyFromSource of a copyStream.
type streamSource struct {
	cs    *copyStream
	batch [][]any
	next  int
	err   error
}

func (r *streamSource) Next() bool {
	for r.next >= len(r.batch) {
		select {
		case b, ok := <-r.cs.rows:
			if !ok {
				return false
			}
			r.batch, r.next = b, 0
		case <-r.cs.stop:
			r.err = errCopyAborted
			return false
		}
	}
	r.next++
	return true
}

func (r *streamSource) Values() ([]any, error) { return r.batch[r.next-1], nil }

func (r *streamSource) Err() error { return r.err }

func (s *BulkStage) add(ctx context.Context, items []stageItem) (err error) {
	if s.closed {
		return pipeline.Errorf(pipeline.Conflict, "bulk stage already finished")
	}
	if s.failed != nil {
		return s.failed
	}
	// A batch that failed leaves the transaction unusable: PostgreSQL
	// refuses every statement after it, and on SQLite a violated constraint
	// has rolled the transaction back (insertRows), after which statements
	// would run and commit one by one. Nothing more is written, and Commit
	// refuses.
	defer func() {
		if err != nil {
			s.failed = fmt.Errorf("an earlier batch failed: %w", err)
		}
	}()
	if !s.table.inputByID {
		s.deferred = append(s.deferred, items...)
		return nil
	}
	if s.inputID == 0 {
		if err := s.tx.tx.QueryRowContext(ctx, "INSERT INTO staging_inputs (input_hash) VALUES ('') RETURNING id").
			Scan(&s.inputID); err != nil {
			return fmt.Errorf("bulk stage %s: record the input: %w", s.table.name, err)
		}
	}
	return s.write(ctx, stageInput{id: s.inputID}, items)
}

// write stages items in the transaction and adds up their results.
func (s *BulkStage) write(ctx context.Context, in stageInput, items []stageItem) error {
	if !s.checked {
		none, err := s.noCurrent(ctx)
		if err != nil {
			return fmt.Errorf("bulk stage %s: %w", s.table.name, err)
		}
		s.tx.noCurrent, s.checked = none, true
	}
	r, err := s.db.stage(ctx, s.tx, s.table, s.portfolio, in, s.now, items)
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
	if err := s.db.lockPortfolios(ctx, s.tx.tx, []string{s.portfolio}); err != nil {
		return false, err
	}
	s.tx.portfolioLocked = true
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
//
// On PostgreSQL it does nothing and leaves all of it to the write: the
// server does the writing, in processes of its own, and the writing
// goroutine only hands the rows to the COPY, while the decoding one was the
// slower side. Hashing and packing on the writing goroutine took the inbox
// benchmark's file from 10.6-14.5 s to 10.1-11.4 s (docs/benchmarks.md,
// issue 20).
func (s *BulkStage) PrepareMetered(entries []pipeline.MeteredEntry) func(context.Context) error {
	if s.db.dialect == Postgres {
		return func(ctx context.Context) error { return s.Metered(ctx, entries) }
	}
	items := meteredItems(entries)
	return func(ctx context.Context) error { return s.add(ctx, items) }
}

// PrepareProfiles is PrepareMetered for profile days.
func (s *BulkStage) PrepareProfiles(entries []pipeline.ProfileEntry) func(context.Context) error {
	if s.db.dialect == Postgres {
		return func(ctx context.Context) error { return s.Profiles(ctx, entries) }
	}
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

// Commit gives the staged versions the file's input hash (a.InputHash),
// records the audit entry and marks the inbox file staged with its receipt
// in the staging transaction, then commits. The file must still be claimed
// by owner; otherwise nothing is committed and the error is a Conflict, so a
// processor whose lease ran out can never stage a file that its successor
// stages too.
func (s *BulkStage) Commit(ctx context.Context, fileID int64, owner, dest string, a *pipeline.AuditEntry,
	receipt func(pipeline.StageResult) ([]byte, error)) (pipeline.StageResult, error) {
	if s.closed {
		return s.res, pipeline.Errorf(pipeline.Conflict, "bulk stage already finished")
	}
	if a.InputHash == "" {
		return s.res, pipeline.Errorf(pipeline.Invalid, "bulk stage committed without an input hash")
	}
	// Commit ends the stage either way: a transaction in which any of the
	// steps below failed must not be committed by a second call.
	s.closed = true
	committed := false
	defer func() {
		if !committed {
			s.abandon()
		}
	}()
	if s.failed != nil {
		return s.res, fmt.Errorf("commit bulk %s: %w", s.table.name, s.failed)
	}
	if len(s.deferred) > 0 {
		if err := s.write(ctx, stageInput{hash: a.InputHash}, s.deferred); err != nil {
			return s.res, err
		}
	}
	if s.stream != nil {
		if err := s.stream.end(); err != nil {
			return s.res, fmt.Errorf("copy into %s: %w", s.table.name, err)
		}
	}
	if s.inputID != 0 {
		if _, err := s.tx.tx.ExecContext(ctx, "UPDATE staging_inputs SET input_hash = ? WHERE id = ?", a.InputHash, s.inputID); err != nil {
			return s.res, fmt.Errorf("bulk stage %s: record the input hash: %w", s.table.name, err)
		}
	}
	s.res.Tally()
	if s.validated {
		s.res.Status = pipeline.Validated
	}
	doc, err := receipt(s.res)
	if err != nil {
		return s.res, err
	}
	res, err := s.tx.tx.NewUpdate().Model((*inboxRow)(nil)).
		Set("state = ?", string(pipeline.InboxStaged)).Set("input_hash = ?", a.InputHash).
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
	committed = true
	s.db.checkpoints.Go(func() { releaseConn(s.db, s.conn, true) })
	*a = entry
	return s.res, nil
}

// Rollback abandons the staging; safe to call after Commit.
func (s *BulkStage) Rollback() {
	if !s.closed {
		s.closed = true
		s.abandon()
	}
}

// abandon stops the COPY, if one runs, rolls the transaction back and gives
// the connection back.
func (s *BulkStage) abandon() {
	if s.stream != nil {
		s.stream.abort()
	}
	_ = s.tx.tx.Rollback()
	releaseConn(s.db, s.conn, false)
}

// On SQLite a bulk file's connection commits with synchronous=FULL, which
// writes the WAL to disk at the commit, and without the automatic
// checkpoint, which would copy the whole file's pages from the WAL into the
// database inside the commit (2.8 s of the inbox benchmark's 18 s). The
// checkpoint runs after the commit instead (releaseConn), beside the move of
// the file to processed/. With the database's synchronous=NORMAL the WAL
// would reach the disk only at that checkpoint, and a power cut could lose
// a file already receipted; FULL makes the staged rows durable when Commit
// returns, as PostgreSQL's commit does.
//
// It also runs without foreign keys. SQLite checks an immediate key of a
// multi-row INSERT at the end of the statement, so each such statement
// keeps a statement journal to undo its rows (see insertRows): 2-3 s of
// writes of the inbox benchmark's file. Every key of the tables a bulk file
// writes names its portfolio, which the file checks once instead
// (lockPortfolios, from BulkStage.noCurrent); portfolios are never deleted.
var bulkPragmas = []string{"PRAGMA synchronous = FULL", "PRAGMA wal_autocheckpoint = 0", "PRAGMA foreign_keys = OFF"}

// releaseConn gives a bulk file's connection back to the pool, on SQLite
// after a checkpoint of what the file wrote (checkpoint) and with the
// pool's settings again.
func releaseConn(db *DB, conn bun.Conn, checkpoint bool) {
	if db.dialect != SQLite {
		_ = conn.Close()
		return
	}
	if checkpoint {
		// PASSIVE: readers and the next writers go on beside it; what they
		// hold back is copied by the next checkpoint.
		_, _ = conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	}
	restoreConn(conn, "PRAGMA synchronous = NORMAL", "PRAGMA wal_autocheckpoint = 1000", "PRAGMA foreign_keys = ON")
}

// restoreConn runs pragmas that give a SQLite connection the pool's settings
// again and gives it back to the pool. A connection that could not be reset
// is dropped instead: one that kept a bulk file's settings would never
// checkpoint, one that kept a short busy timeout would fail writes.
func restoreConn(conn bun.Conn, pragmas ...string) {
	for _, q := range pragmas {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			break
		}
	}
	_ = conn.Close()
}

func meteredItems(entries []pipeline.MeteredEntry) []stageItem {
	items := make([]stageItem, len(entries))
	packSeries(len(entries), func(i int) []float64 { return entries[i].Values }, func(i int, raw, packed []byte) {
		e := entries[i]
		items[i] = stageItem{
			key:  []string{e.Malo, e.Day.String()},
			hash: contentHash([]byte(e.Unit), raw), payload: []any{string(e.Unit), packed},
		}
	})
	return items
}

func profileItems(entries []pipeline.ProfileEntry) []stageItem {
	items := make([]stageItem, len(entries))
	packSeries(len(entries), func(i int) []float64 { return entries[i].ValuesKWh }, func(i int, raw, packed []byte) {
		e := entries[i]
		items[i] = stageItem{key: []string{e.MGA, e.Profile, e.Day.String()}, hash: contentHash(raw), payload: []any{packed}}
	})
	return items
}

// packSeries encodes the values of n entries in their stored form
// (appendSeries), all in one buffer: one allocation per batch instead of one
// per entry. item receives entry i's values as appendValues gives them,
// which the content hash covers, and in their stored form; the first is
// only valid during the call.
func packSeries(n int, values func(int) []float64, item func(i int, raw, packed []byte)) {
	// Room for the larger form of each entry: a header of up to 12 bytes
	// and 8 bytes per value (a zigzag varint of a difference below 2^54
	// takes at most 8). Were it exceeded, append would move on to a new
	// array, and the entries before would keep the old one.
	total := 0
	for i := range n {
		total += 12 + 8*len(values(i))
	}
	buf := make([]byte, 0, total)
	var raw []byte
	for i := range n {
		vals := values(i)
		raw = appendValues(raw[:0], vals)
		start := len(buf)
		buf = appendSeries(buf, vals)
		item(i, raw, buf[start:len(buf):len(buf)])
	}
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
