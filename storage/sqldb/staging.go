package sqldb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// stagingTable describes one versioned table of the staging area. Every such
// table has portfolio_id, its key columns, version, content_hash, input_hash,
// its payload columns, received_at and superseded_at; the current version of a
// key is the row whose superseded_at is NULL.
type stagingTable struct {
	name    string
	keyCols []string
	payCols []string
	// inputByID tells that the table has input_id, so that a bulk file's
	// versions can name their input before its hash is known
	// (staging_inputs).
	inputByID bool
}

var (
	forecastTable = stagingTable{"forecast_versions", []string{"delivery_day"}, []string{"body"}, false}
	locationTable = stagingTable{"location_versions", []string{"malo"}, []string{"slices"}, false}
	meteredTable  = stagingTable{"metered_versions", []string{"malo", "day"}, []string{"unit", "vals_packed"}, true}
	profileTable  = stagingTable{"profile_versions", []string{"mga", "profile", "day"}, []string{"vals_packed"}, true}
)

// stageInput is what new versions record of their input: its hash, or, for
// a bulk file still being read, the id of its staging_inputs row, which gets
// the hash at the commit.
type stageInput struct {
	hash string
	id   int64
}

// inputHashExpr is the input hash of a row of a table with input_id.
const inputHashExpr = "COALESCE((SELECT s.input_hash FROM staging_inputs s WHERE s.id = input_id), input_hash)"

// stageItem is one key of a submission with its payload. hash identifies the
// content: equal hashes mean an identical re-send, which writes nothing.
type stageItem struct {
	key     []string
	hash    string
	payload []any
}

// Chunk sizes keep statements below the parameter limits of both backends
// (SQLite: 32766 host parameters, PostgreSQL: 65535). The SQLite driver binds
// parameters in time that grows faster than their number (modernc's bind
// looks each parameter up by a scan of the arguments), so SQLite gets
// smaller statements: 32 rows of 6 to 9 parameters. With 64 rows a bulk file
// took about 10% more CPU time (storage/sqldb BenchmarkBulkStageMetered:
// 2.02 s against 1.78-1.91 s per 50,000 metered days; 16 rows gave
// 1.70-1.93 s, and 4 rows lost more to the statements than they won in
// binding). Once the columns every row shares were literals (insertRows),
// 64 rows were no faster in the inbox benchmark (13.0-13.3 s against
// 12.9-13.8 s) and 128 slower (14.6-14.7 s).
const (
	lookupChunk       = 100
	insertChunk       = 500
	sqliteInsertChunk = 32
)

func (db *DB) insertChunk() int {
	if db.dialect == Postgres {
		return insertChunk
	}
	return sqliteInsertChunk
}

func contentHash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// stageTx is the transaction a staging write runs in, with the helpers a
// bulk file brings along.
type stageTx struct {
	tx bun.Tx
	// stmts keeps statements prepared; nil executes without preparing.
	stmts stmtCache
	// copy, when set, writes new rows with PostgreSQL's COPY instead of
	// multi-row INSERTs.
	copy copyFunc
	// keyLocks, on PostgreSQL, locks the submission's keys instead of its
	// whole portfolio and table (see lockKeys); for submissions of a few keys.
	keyLocks bool
	// noCurrent, when set, tells stage that the portfolio had no current
	// version in the table when the transaction took the table's write lock
	// (see BulkStage.add), so that looking up the current versions of the
	// keys would find nothing but rows this transaction wrote itself.
	noCurrent bool
	// portfolioLocked tells that the transaction holds the portfolio's
	// row lock already (lockPortfolios).
	portfolioLocked bool
}

// lockPortfolios makes sure that each portfolio exists and stays until the
// transaction ends, and fails as NotFound when one does not. It takes the
// place of the foreign key to portfolios where that is not checked per row:
//   - on PostgreSQL for the metered and profile versions, whose key the
//     server checked with a query per row (migration 20261202000003); a
//     key-share lock keeps the row;
//   - on SQLite for every table a bulk file writes, since its connection
//     runs without foreign keys (bulkPragmas); the immediate transaction
//     holds the database's write lock already.
//
// Portfolios are never deleted, so one check per transaction is what the
// key guaranteed.
func (db *DB) lockPortfolios(ctx context.Context, tx bun.Tx, ids []string) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	q := "SELECT id FROM portfolios WHERE id = ANY($1) ORDER BY id FOR KEY SHARE"
	args := []any{ids}
	if db.dialect == SQLite {
		q = "SELECT id FROM portfolios WHERE id IN (" + placeholders(len(ids)) + ") ORDER BY id"
		args = make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
	}
	var found []string
	rows, err := tx.Tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("lock portfolios: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		found = append(found, id)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, ok := slices.BinarySearch(found, id); !ok {
			return pipeline.Errorf(pipeline.NotFound, "unknown portfolio %q", id)
		}
	}
	return nil
}

// maxKeyLocks is the most keys a submission through the API locks one by
// one; larger ones lock their portfolio and table. PostgreSQL keeps every
// lock in a shared table of max_locks_per_transaction x max_connections
// slots (12,800 here), which a 10,000-entry submission would nearly fill.
const maxKeyLocks = 64

// copyFunc writes rows into the columns of a table in one COPY.
type copyFunc func(ctx context.Context, table string, cols []string, rows [][]any) error

// stage writes new versions for the items whose content differs from the
// current version and supersedes those, in the caller's transaction.
func (db *DB) stage(ctx context.Context, st stageTx, t stagingTable, portfolio string, in stageInput,
	now time.Time, items []stageItem) (pipeline.StageResult, error) {
	tx, cache := st.tx, st.stmts
	var res pipeline.StageResult
	// SQLite checks the key of these rows itself, except on a bulk file's
	// connection, which locked the portfolio before (BulkStage.noCurrent).
	if db.dialect == Postgres && t.inputByID && !st.portfolioLocked {
		if err := db.lockPortfolios(ctx, tx, []string{portfolio}); err != nil {
			return res, err
		}
	}
	if db.dialect == Postgres && st.keyLocks {
		if err := db.lockKeys(ctx, tx, t, keyLock{portfolio, items}); err != nil {
			return res, err
		}
	} else if db.dialect == Postgres && !st.noCurrent {
		// A bulk stage that found no current version took the lock below
		// already and looks nothing up (BulkStage.noCurrent); its rows may
		// be streaming in a COPY, beside which no statement can run.
		//
		// Two writers of the same portfolio and table must not both read "version
		// 3 is current" and both write version 4; SQLite's immediate transactions
		// already serialise writers.
		//
		// pgx prepares and reuses every statement, and after five runs
		// PostgreSQL may switch one to a generic plan, made for a table as
		// small as it was then; custom plans see the table as it is. The
		// setting covers the lookup only: the rest of the transaction goes
		// back to the default below, or the foreign-key check of every
		// inserted row would be planned again per row (over half of the time
		// of a bulk COPY).
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0)), "+
			"set_config('plan_cache_mode', 'force_custom_plan', true)", portfolio+"/"+t.name); err != nil {
			return res, err
		}
	}
	type current struct {
		id      int64
		version int
		hash    string
	}
	cur := make(map[string]current, len(items))
	keys := make([]string, len(t.keyCols))
	dest := []any{new(int64), new(int), new(string)}
	for i := range keys {
		dest = append(dest, &keys[i])
	}
	for start := 0; start < len(items) && !st.noCurrent; start += db.lookupChunk() {
		q, args := db.currentQuery(t, portfolio, items[start:min(start+db.lookupChunk(), len(items))])
		if db.dialect == Postgres && st.keyLocks {
			// An unnamed statement is planned for its arguments each time,
			// which is what force_custom_plan gives the cached one below,
			// without the two statements that set and reset it.
			args = append([]any{pgx.QueryExecModeExec}, args...)
		}
		rows, err := cache.query(ctx, db, tx, q, args...)
		if err != nil {
			return res, fmt.Errorf("look up current %s: %w", t.name, err)
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return res, err
			}
			cur[strings.Join(keys, "\x00")] = current{*dest[0].(*int64), *dest[1].(*int), *dest[2].(*string)}
		}
		if err := rows.Close(); err != nil {
			return res, err
		}
		if err := rows.Err(); err != nil {
			return res, err
		}
	}

	if db.dialect == Postgres && !st.keyLocks && !st.noCurrent {
		if _, err := tx.ExecContext(ctx, "SELECT set_config('plan_cache_mode', 'auto', true)"); err != nil {
			return res, err
		}
	}

	var supersede []any
	type newRow struct {
		it      stageItem
		version int
	}
	var inserts []newRow
	for _, it := range items {
		c, ok := cur[strings.Join(it.key, "\x00")]
		switch {
		case ok && c.hash == it.hash:
			res.Unchanged++
			res.Version = max(res.Version, c.version)
			continue
		case ok:
			res.Replaced++
			supersede = append(supersede, c.id)
			inserts = append(inserts, newRow{it, c.version + 1})
		default:
			res.Created++
			inserts = append(inserts, newRow{it, 1})
		}
		res.Version = max(res.Version, inserts[len(inserts)-1].version)
	}
	res.Tally()

	// Supersede before inserting: the partial unique index allows one current
	// row per key at any moment.
	for start := 0; start < len(supersede); start += db.insertChunk() {
		ids := supersede[start:min(start+db.insertChunk(), len(supersede))]
		q := fmt.Sprintf("UPDATE %s SET superseded_at = ? WHERE id IN (%s)", t.name, placeholders(len(ids)))
		if err := cache.exec(ctx, db, tx, q, append([]any{db.timeArg(now)}, ids...)...); err != nil {
			return res, fmt.Errorf("supersede %s: %w", t.name, err)
		}
	}
	// What differs per row, and what every row shares: the portfolio, the
	// input, the time. Converting the shared values once matters to a bulk
	// file, which would otherwise format the time (SQLite stores text) and
	// box the strings a million times; insertRows writes them into SQLite's
	// statement as literals (see there).
	cols := append(append(slices.Clone(t.keyCols), "version", "content_hash"), t.payCols...)
	shared := []sharedCol{{"portfolio_id", portfolio}, {"input_hash", in.hash}, {"received_at", db.timeArg(now)}}
	switch {
	case in.id != 0 && !t.inputByID:
		return res, fmt.Errorf("%s has no input_id", t.name)
	case in.id != 0:
		shared = append(shared, sharedCol{"input_id", in.id})
	}
	appendRow := func(row []any, i int) []any {
		r := inserts[i]
		for _, k := range r.it.key {
			row = append(row, k)
		}
		row = append(row, r.version, r.it.hash)
		return append(row, r.it.payload...)
	}
	if st.copy != nil && len(inserts) > 0 {
		all := withShared(cols, shared)
		rows := make([][]any, len(inserts))
		for i := range inserts {
			rows[i] = appendShared(appendRow(make([]any, 0, len(all)), i), shared)
		}
		if err := st.copy(ctx, t.name, all, rows); err != nil {
			return res, fmt.Errorf("copy into %s: %w", t.name, err)
		}
		return res, nil
	}
	if err := db.insertRows(ctx, cache, tx, t.name, cols, shared, len(inserts), appendRow); err != nil {
		return res, err
	}
	return res, nil
}

// sharedCol is a column that has one value for all rows of an insertRows.
type sharedCol struct {
	name  string
	value any
}

// withShared returns the columns cols followed by the shared ones.
func withShared(cols []string, shared []sharedCol) []string {
	all := slices.Clone(cols)
	for _, c := range shared {
		all = append(all, c.name)
	}
	return all
}

func appendShared(row []any, shared []sharedCol) []any {
	for _, c := range shared {
		row = append(row, c.value)
	}
	return row
}

// insertRows inserts n rows into table in multi-row INSERTs of
// db.insertChunk() rows: appendRow appends row i's values of the columns
// cols to args, and the columns shared have the same value in every row.
// Both the staging of one submission (stage) and that of a group
// (stageBatch) write their new versions with it.
//
// On SQLite the shared values are literals in the statement, which a bulk
// file prepares once: modernc's driver looks each bound parameter up by a
// scan of all arguments and copies each string into C memory, so the
// parameters of a statement cost time that grows with their square. With
// its four shared columns as parameters, binding took 2.4-3.3 s of the
// inbox benchmark's file, as literals 1.2 s (docs/benchmarks.md, issue 20).
// PostgreSQL gets them as parameters, since pgx caches statements by their
// text.
//
// SQLite's INSERT is OR ROLLBACK: a multi-row INSERT whose constraint may
// abort it midway must keep a statement journal to undo its own rows, a
// copy of each page it touches that the transaction had changed before
// (2-3 s of writes of the inbox benchmark's file). With OR ROLLBACK a
// violated constraint ends the whole transaction instead, which every
// caller rolls back on any error anyway. A foreign key needs the journal
// too; a bulk file's connection runs without them (bulkPragmas).
func (db *DB) insertRows(ctx context.Context, cache stmtCache, tx bun.Tx, table string, cols []string, shared []sharedCol,
	n int, appendRow func(args []any, i int) []any) error {
	verb, ph, perRow := "INSERT", slices.Repeat([]string{"?"}, len(cols)), shared
	if db.dialect == SQLite {
		verb, perRow = "INSERT OR ROLLBACK", nil
	}
	for _, c := range shared {
		if db.dialect == SQLite {
			ph = append(ph, string(db.bun.QueryGen().Append(nil, c.value)))
		} else {
			ph = append(ph, "?")
		}
	}
	head := fmt.Sprintf("%s INTO %s (%s) VALUES ", verb, table, strings.Join(withShared(cols, shared), ", "))
	rowPH := "(" + strings.Join(ph, ", ") + ")"
	text := func(rows int) string { return head + strings.Repeat(rowPH+", ", rows-1) + rowPH }
	// The text of a full chunk is written once per call: a bulk file's batch
	// of 2,000 days runs it 62 times.
	chunk := db.insertChunk()
	var full string
	if n >= chunk {
		full = text(chunk)
	}
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		q := full
		if end-start < chunk {
			q = text(end - start)
		}
		args := make([]any, 0, (end-start)*(len(cols)+len(perRow)))
		for i := start; i < end; i++ {
			args = appendShared(appendRow(args, i), perRow)
		}
		if err := cache.exec(ctx, db, tx, q, args...); err != nil {
			return fmt.Errorf("insert %s: %w", table, err)
		}
	}
	return nil
}

// lockKeys takes, on PostgreSQL, a shared lock on each submission's
// portfolio and table and then an exclusive lock on each key of their
// items, in one statement.
// Writers of different keys then run side by side and their commits share
// the WAL flushes, where the exclusive lock of the portfolio and table that
// stage takes otherwise made every submission of a portfolio wait for the
// previous one's commit: one fsync per submission, 247 small forecasts/s at
// 64 clients. Writers of one key still queue, and a writer holding the
// exclusive lock (a large submission or a bulk file) still excludes them
// all. The shared lock comes first, so that no transaction holding a key
// waits for the portfolio's lock behind a queued exclusive writer (a
// deadlock); the subquery refers to their count so that PostgreSQL
// evaluates it after. Each kind is taken in sorted order, and the keys' locks use the two-int4 key space, which does not
// overlap the bigint space of the table locks, in sorted order so that
// two writers of the same keys cannot deadlock either.
func (db *DB) lockKeys(ctx context.Context, tx bun.Tx, t stagingTable, subs ...keyLock) error {
	var tables []string
	ids := make([]uint64, 0, len(subs))
	for _, sub := range subs {
		tables = append(tables, sub.portfolio+"/"+t.name)
		for _, it := range sub.items {
			h := fnv.New64a()
			h.Write([]byte(sub.portfolio + "\x00" + t.name))
			for _, k := range it.key {
				h.Write([]byte("\x00" + k))
			}
			ids = append(ids, h.Sum64())
		}
	}
	slices.Sort(tables)
	tables = slices.Compact(tables)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	hi, lo := make([]int32, len(ids)), make([]int32, len(ids))
	for i, id := range ids {
		hi[i], lo[i] = int32(id>>32), int32(id)
	}
	q := "SELECT (SELECT count(pg_advisory_xact_lock(k.hi, k.lo)) FROM unnest($2::int4[], $3::int4[]) AS k(hi, lo) " +
		"WHERE s.n IS NOT NULL) FROM (SELECT count(pg_advisory_xact_lock_shared(hashtextextended(p, 0))) AS n " +
		"FROM unnest($1::text[]) AS p OFFSET 0) s"
	if _, err := tx.Tx.ExecContext(ctx, q, tables, hi, lo); err != nil {
		return fmt.Errorf("lock %s keys: %w", t.name, err)
	}
	return nil
}

// keyLock names the keys of one submission for lockKeys.
type keyLock struct {
	portfolio string
	items     []stageItem
}

// stmtCache keeps the statements of one transaction prepared, so that a
// bulk file's thousands of equal-shaped chunks are parsed once. The statements
// go to the driver with real placeholders rather than through bun's query
// formatting, which would inline every value into the SQL text. A nil cache
// executes without preparing.
type stmtCache map[string]*sql.Stmt

func (c stmtCache) stmt(ctx context.Context, db *DB, tx bun.Tx, q string) (*sql.Stmt, error) {
	if s, ok := c[q]; ok {
		return s, nil
	}
	s, err := tx.Tx.PrepareContext(ctx, db.rebind(q))
	if err != nil {
		return nil, err
	}
	c[q] = s
	return s, nil
}

func (c stmtCache) exec(ctx context.Context, db *DB, tx bun.Tx, q string, args ...any) error {
	if c == nil {
		_, err := tx.Tx.ExecContext(ctx, db.rebind(q), args...)
		return err
	}
	s, err := c.stmt(ctx, db, tx, q)
	if err != nil {
		return err
	}
	_, err = s.ExecContext(ctx, args...)
	return err
}

func (c stmtCache) query(ctx context.Context, db *DB, tx bun.Tx, q string, args ...any) (*sql.Rows, error) {
	if c == nil {
		return tx.Tx.QueryContext(ctx, db.rebind(q), args...)
	}
	s, err := c.stmt(ctx, db, tx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// rebind turns the ? placeholders of a query into PostgreSQL's $n.
func (db *DB) rebind(q string) string {
	if db.dialect != Postgres {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + len(q)/4)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// timeArg is a timestamp as the driver should store it: SQLite keeps text in
// the format bun writes and reads, PostgreSQL takes the time itself.
func (db *DB) timeArg(t time.Time) any {
	if db.dialect == Postgres {
		return t.UTC()
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}

// lookupChunk is how many keys one lookup of current versions carries.
// PostgreSQL takes all keys at once as arrays; SQLite takes row values in
// chunks below its host-parameter limit.
func (db *DB) lookupChunk() int {
	if db.dialect == Postgres {
		return 1 << 30
	}
	return lookupChunk
}

// currentQuery selects id, version, content_hash and the key columns of the
// current versions of the given keys. PostgreSQL plans a row-value IN list of
// hundreds of tuples as a filter over the whole table (2 s for 10,000 keys
// against 50,000 rows here), so it joins unnest()ed key arrays instead, which
// uses the partial unique index of current rows.
func (db *DB) currentQuery(t stagingTable, portfolio string, items []stageItem) (string, []any) {
	cols := strings.Join(t.keyCols, ", ")
	if db.dialect == Postgres {
		arrays := make([][]string, len(t.keyCols))
		for c := range arrays {
			arrays[c] = make([]string, len(items))
			for i, it := range items {
				arrays[c][i] = it.key[c]
			}
		}
		var on, un []string
		args := make([]any, 0, len(arrays)+1)
		for c, col := range t.keyCols {
			on = append(on, fmt.Sprintf("v.%s = k.%s", col, col))
			un = append(un, "?::text[]")
			args = append(args, arrays[c])
		}
		// A LATERAL lookup per key: a plain join let the planner choose a
		// hash join over the whole table once it grew inside a bulk
		// transaction (statistics do not see uncommitted rows), which made a
		// 1,000,000-row file quadratic. OFFSET 0 keeps the planner from
		// pulling the subquery up into that same join; each key is then one
		// probe of the partial unique index of current rows.
		q := fmt.Sprintf("SELECT v.id, v.version, v.content_hash, %s FROM unnest(%s) AS k(%s) CROSS JOIN LATERAL "+
			"(SELECT id, version, content_hash FROM %s v WHERE v.portfolio_id = ? AND %s AND v.superseded_at IS NULL OFFSET 0) v",
			prefixed("k.", t.keyCols), strings.Join(un, ", "), cols, t.name, strings.Join(on, " AND "))
		return q, append(args, portfolio)
	}
	var q strings.Builder
	args := make([]any, 0, 1+len(items)*len(t.keyCols))
	fmt.Fprintf(&q, "SELECT id, version, content_hash, %s FROM %s WHERE portfolio_id = ? AND superseded_at IS NULL AND (%s) IN (",
		cols, t.name, cols)
	args = append(args, portfolio)
	for i, it := range items {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(" + placeholders(len(t.keyCols)) + ")")
		for _, k := range it.key {
			args = append(args, k)
		}
	}
	q.WriteString(")")
	return q.String(), args
}

func prefixed(prefix string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// stageAndAudit runs one staging write and its audit entry in one transaction,
// so that a crash never leaves a version without its request record or the
// reverse. On PostgreSQL, submissions of a few keys share their transaction
// with others that arrive at the same time (see groupcommit.go).
func (db *DB) stageAndAudit(ctx context.Context, t stagingTable, a *pipeline.AuditEntry, items []stageItem) (pipeline.StageResult, error) {
	if db.dialect == Postgres && len(items) <= maxKeyLocks {
		return db.groupOf(t).stage(ctx, a, items)
	}
	return db.stageAlone(ctx, t, a, items)
}

// stageAlone runs one staging write and its audit entry in a transaction of
// their own.
func (db *DB) stageAlone(ctx context.Context, t stagingTable, a *pipeline.AuditEntry, items []stageItem) (pipeline.StageResult, error) {
	var res pipeline.StageResult
	// The transaction works on a copy: only a committed entry may reach the
	// caller with its id, or the caller would think a rolled-back entry stored
	// and not record the failed request.
	entry := *a
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var err error
		res, err = db.stage(ctx, stageTx{tx: tx, keyLocks: len(items) <= maxKeyLocks}, t, a.PortfolioID, stageInput{hash: a.InputHash},
			a.ReceivedAt, items)
		if err != nil {
			return err
		}
		entry.Outcome = string(res.Status)
		return db.insertAudit(ctx, tx, &entry)
	})
	if err != nil {
		return pipeline.StageResult{}, fmt.Errorf("stage %s for %s: %w", t.name, a.PortfolioID, err)
	}
	*a = entry
	return res, nil
}

// StageForecast stores a forecast as the new current version of its delivery
// day unless it is identical to the current one. canonical is the validated
// submission's canonical JSON, kept as the version's body.
func (db *DB) StageForecast(ctx context.Context, a *pipeline.AuditEntry, f pipeline.Forecast, canonical []byte) (pipeline.StageResult, error) {
	return db.stageAndAudit(ctx, forecastTable, a, forecastItems(f, canonical))
}

// StageLocations replaces the whole history of each listed market location.
func (db *DB) StageLocations(ctx context.Context, a *pipeline.AuditEntry, locs []pipeline.Location) (pipeline.StageResult, error) {
	items, err := locationItems(locs)
	if err != nil {
		return pipeline.StageResult{}, err
	}
	return db.stageAndAudit(ctx, locationTable, a, items)
}

// StageMetered stores metered days per market location.
func (db *DB) StageMetered(ctx context.Context, a *pipeline.AuditEntry, entries []pipeline.MeteredEntry) (pipeline.StageResult, error) {
	return db.stageAndAudit(ctx, meteredTable, a, meteredItems(entries))
}

// StageProfiles stores rolled-out profile days per MGA and profile.
func (db *DB) StageProfiles(ctx context.Context, a *pipeline.AuditEntry, entries []pipeline.ProfileEntry) (pipeline.StageResult, error) {
	return db.stageAndAudit(ctx, profileTable, a, profileItems(entries))
}

type versionCols struct {
	Version      int        `bun:"version"`
	InputHash    string     `bun:"input_hash"`
	ReceivedAt   time.Time  `bun:"received_at"`
	SupersededAt *time.Time `bun:"superseded_at"`
}

func (v versionCols) domain() pipeline.Version {
	out := pipeline.Version{Version: v.Version, InputHash: v.InputHash, ReceivedAt: v.ReceivedAt.UTC()}
	if v.SupersededAt != nil {
		t := v.SupersededAt.UTC()
		out.SupersededAt = &t
	}
	return out
}

type forecastRow struct {
	bun.BaseModel `bun:"table:forecast_versions"`
	versionCols
	DeliveryDay string `bun:"delivery_day"`
	Body        string `bun:"body"`
}

// Forecast returns a forecast version of a delivery day: the current one when
// version is 0.
func (db *DB) Forecast(ctx context.Context, portfolio string, day pipeline.Day, version int) (pipeline.StoredForecast, error) {
	var row forecastRow
	q := db.bun.NewSelect().Model(&row).Where("portfolio_id = ?", portfolio).Where("delivery_day = ?", day.String())
	if version == 0 {
		q = q.Where("superseded_at IS NULL")
	} else {
		q = q.Where("version = ?", version)
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return pipeline.StoredForecast{}, pipeline.Errorf(pipeline.NotFound, "no forecast for %s", day)
	} else if err != nil {
		return pipeline.StoredForecast{}, fmt.Errorf("get forecast %s %s: %w", portfolio, day, err)
	}
	return pipeline.StoredForecast{
		Version: row.domain(), PortfolioID: portfolio, DeliveryDay: day, Body: json.RawMessage(row.Body),
	}, nil
}

// ForecastVersions lists every stored version of a delivery day, newest first.
func (db *DB) ForecastVersions(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.Version, error) {
	var rows []versionCols
	err := db.bun.NewSelect().Table(forecastTable.name).Column("version", "input_hash", "received_at", "superseded_at").
		Where("portfolio_id = ?", portfolio).Where("delivery_day = ?", day.String()).
		Order("version DESC").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("list forecast versions %s %s: %w", portfolio, day, err)
	}
	if len(rows) == 0 {
		return nil, pipeline.Errorf(pipeline.NotFound, "no forecast for %s", day)
	}
	out := make([]pipeline.Version, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

type locationRow struct {
	bun.BaseModel `bun:"table:location_versions"`
	versionCols
	Malo   string `bun:"malo"`
	Slices string `bun:"slices"`
}

// Location returns the current master data of a market location.
func (db *DB) Location(ctx context.Context, portfolio, malo string) (pipeline.StoredLocation, error) {
	var row locationRow
	err := db.bun.NewSelect().Model(&row).Where("portfolio_id = ?", portfolio).Where("malo = ?", malo).
		Where("superseded_at IS NULL").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.StoredLocation{}, pipeline.Errorf(pipeline.NotFound, "no master data for MaLo '%s'", malo)
	}
	if err != nil {
		return pipeline.StoredLocation{}, fmt.Errorf("get location %s %s: %w", portfolio, malo, err)
	}
	out := pipeline.StoredLocation{Version: row.domain(), PortfolioID: portfolio, Malo: malo}
	if err := json.Unmarshal([]byte(row.Slices), &out.Slices); err != nil {
		return out, fmt.Errorf("decode slices of %s: %w", malo, err)
	}
	return out, nil
}

var stagingKinds = map[string]stagingTable{
	"forecast": forecastTable, "location": locationTable, "metered": meteredTable, "profile": profileTable,
	"trades": tradeTable,
}

// CountVersions counts the stored versions of a staging kind (forecast,
// location, metered, profile, trades) for a portfolio: only the current ones, or all
// with the superseded history. The contract tests check version history with it.
func (db *DB) CountVersions(ctx context.Context, kind, portfolio string, currentOnly bool) (int, error) {
	t, ok := stagingKinds[kind]
	if !ok {
		return 0, pipeline.Errorf(pipeline.Invalid, "unknown staging kind %q", kind)
	}
	q := db.bun.NewSelect().Table(t.name).Where("portfolio_id = ?", portfolio)
	if currentOnly {
		q = q.Where("superseded_at IS NULL")
	}
	n, err := q.Count(ctx)
	return int(n), err
}

type valuesRow struct {
	versionCols
	Unit string `bun:"unit"`
	Vals []byte `bun:"vals_packed"`
	vals []float64
}

// currentValues reads the current version of one key of a table with
// quarter-hour values (metered or profile), its unit when the table has one,
// and decodes the values. missing is the NotFound message.
func (db *DB) currentValues(ctx context.Context, t stagingTable, portfolio string, key []string, missing string) (valuesRow, error) {
	var row valuesRow
	q := db.bun.NewSelect().Table(t.name).Column("version").ColumnExpr(inputHashExpr+" AS input_hash").
		Column("received_at", "superseded_at").Column(t.payCols...).
		Where("portfolio_id = ?", portfolio).Where("superseded_at IS NULL")
	for i, col := range t.keyCols {
		q = q.Where("? = ?", bun.Ident(col), key[i])
	}
	err := q.Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return row, pipeline.Errorf(pipeline.NotFound, "%s", missing)
	}
	if err != nil {
		return row, fmt.Errorf("get %s %s %v: %w", t.name, portfolio, key, err)
	}
	if row.vals, err = decodeSeries(row.Vals); err != nil {
		return row, fmt.Errorf("%s %s %v: %w", t.name, portfolio, key, err)
	}
	return row, nil
}

// MeteredDay returns the current metered values of a market location's day.
func (db *DB) MeteredDay(ctx context.Context, portfolio, malo string, day pipeline.Day) (pipeline.StoredMetered, error) {
	row, err := db.currentValues(ctx, meteredTable, portfolio, []string{malo, day.String()},
		fmt.Sprintf("no metered data for MaLo '%s' on %s", malo, day))
	if err != nil {
		return pipeline.StoredMetered{}, err
	}
	return pipeline.StoredMetered{Version: row.domain(), PortfolioID: portfolio,
		MeteredEntry: pipeline.MeteredEntry{Day: day, Malo: malo, Unit: pipeline.Unit(row.Unit), Values: row.vals}}, nil
}

// ProfileDay returns the current rolled-out profile values of an MGA, profile and day.
func (db *DB) ProfileDay(ctx context.Context, portfolio, mga, profile string, day pipeline.Day) (pipeline.StoredProfile, error) {
	row, err := db.currentValues(ctx, profileTable, portfolio, []string{mga, profile, day.String()},
		fmt.Sprintf("no profile %s/%s on %s", mga, profile, day))
	if err != nil {
		return pipeline.StoredProfile{}, err
	}
	return pipeline.StoredProfile{Version: row.domain(), PortfolioID: portfolio,
		ProfileEntry: pipeline.ProfileEntry{Day: day, MGA: mga, Profile: profile, ValuesKWh: row.vals}}, nil
}
