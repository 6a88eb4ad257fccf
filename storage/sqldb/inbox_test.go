package sqldb_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

func inboxFile(key, etag string) pipeline.InboxFile {
	return pipeline.InboxFile{Key: key, ETag: etag, Size: 10, PortfolioID: "p1", Kind: "metered-data", Name: "a.csv"}
}

func meteredDay(malo string, v float64) pipeline.MeteredEntry {
	vals := make([]float64, 96)
	for i := range vals {
		vals[i] = v
	}
	return pipeline.MeteredEntry{Day: pipeline.NewDay(2026, 11, 20), Malo: malo, Unit: pipeline.KWH, Values: vals}
}

func TestInboxClaims(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		lease := time.Minute
		a, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e1"), "A", t0, lease)
		if err != nil || !ok || a.State != pipeline.InboxProcessing || a.Attempts != 1 {
			t.Fatalf("first claim = %+v, %v, %v", a, ok, err)
		}
		// A live lease keeps everyone else out, the holder included as a new claim.
		if _, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e1"), "B", t0.Add(30*time.Second), lease); err != nil || ok {
			t.Fatalf("claim during live lease = %v, %v", ok, err)
		}
		if err := db.RenewInboxLease(ctx, a.ID, "A", t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e1"), "B", t0.Add(90*time.Second), lease); ok {
			t.Fatal("renewed lease was taken over")
		}
		// After the lease, B takes over the crashed claim, on the object as it is now.
		b, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e2"), "B", t0.Add(3*time.Minute), lease)
		if err != nil || !ok || b.ID != a.ID || b.Owner != "B" || b.Attempts != 2 || b.ETag != "e2" {
			t.Fatalf("take-over = %+v, %v, %v", b, ok, err)
		}
		// A's late writes are refused.
		if err := db.RenewInboxLease(ctx, a.ID, "A", t0.Add(10*time.Minute)); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("renew by old owner = %v", err)
		}
		if err := db.MarkInboxRejected(ctx, a.ID, "A", "x", "rejected/p1/a.csv", []byte(`{}`)); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("reject by old owner = %v", err)
		}
		st, err := db.BeginBulk(ctx, "metered", "p1", t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("12345678901", 1)}); err != nil {
			t.Fatal(err)
		}
		_, err = st.Commit(ctx, a.ID, "A", "processed/p1/x", audit("p1", "h1"), func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
		if pipeline.KindOf(err) != pipeline.Conflict {
			t.Fatalf("commit by old owner = %v", err)
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 0 {
			t.Fatalf("lost claim staged %d rows", n)
		}
		// The owner's commit stages, records the receipt, and finishing closes the row.
		st, _ = db.BeginBulk(ctx, "metered", "p1", t0)
		_ = st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("12345678901", 1), meteredDay("12345678902", 2)})
		_ = st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("12345678903", 3)})
		res, err := st.Commit(ctx, b.ID, "B", "processed/p1/2026-11-22/a.csv", audit("p1", "h1"),
			func(r pipeline.StageResult) ([]byte, error) { return json.Marshal(r) })
		if err != nil || res.Created != 3 || res.Status != pipeline.Created {
			t.Fatalf("commit = %+v, %v", res, err)
		}
		open, err := db.OpenInboxFiles(ctx)
		if err != nil || len(open) != 1 || open[0].State != pipeline.InboxStaged || open[0].DestKey != "processed/p1/2026-11-22/a.csv" {
			t.Fatalf("open = %+v, %v", open, err)
		}
		var receipt pipeline.StageResult
		if err := json.Unmarshal(open[0].Result, &receipt); err != nil || receipt.Created != 3 {
			t.Errorf("stored receipt = %s", open[0].Result)
		}
		ev := pipeline.Event{At: t0, Kind: "inbox.processed", PortfolioID: "p1", Subject: b.Key, Data: json.RawMessage(`{"id":1}`)}
		if err := db.FinishInboxFile(ctx, b.ID, "B", t0.Add(4*time.Minute), ev); err != nil {
			t.Fatal(err)
		}
		if err := db.FinishInboxFile(ctx, b.ID, "B", t0.Add(4*time.Minute), ev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("second finish = %v", err)
		}
		// A new drop under the same name is a new life.
		c, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e2"), "A", t0.Add(5*time.Minute), lease)
		if err != nil || !ok || c.ID == b.ID {
			t.Fatalf("claim after finish = %+v, %v, %v", c, ok, err)
		}
		done, err := db.InboxFiles(ctx, pipeline.InboxQuery{States: []pipeline.InboxState{pipeline.InboxProcessed}, Limit: 10})
		if err != nil || len(done) != 1 || done[0].FinishedAt == nil {
			t.Fatalf("processed = %+v, %v", done, err)
		}
		evs, err := db.Events(ctx, pipeline.EventQuery{Kind: "inbox.*", Limit: 10})
		if err != nil || len(evs) != 1 || evs[0].Subject != b.Key || string(evs[0].Data) != `{"id":1}` {
			t.Fatalf("events = %+v, %v", evs, err)
		}
		if evs, _ := db.Events(ctx, pipeline.EventQuery{AfterID: evs[0].ID, Limit: 10}); len(evs) != 0 {
			t.Errorf("events after the last = %+v", evs)
		}
	})
}

// TestInboxClaimRace lets many owners claim the same key at once: exactly one wins.
func TestInboxClaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/race.csv", "e"), string(rune('A'+i)), t0, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					winners++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if winners != 1 {
			t.Fatalf("%d owners claimed the same file", winners)
		}
	})
}

// TestBulkStageRollback: a file staged in batches is all or nothing.
func TestBulkStageRollback(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		st, err := db.BeginBulk(ctx, "metered", "p1", t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("12345678901", 1)}); err != nil {
			t.Fatal(err)
		}
		st.Rollback()
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 0 {
			t.Fatalf("rolled-back bulk left %d rows", n)
		}
	})
}

// TestBulkStageCommit stages a file in two batches over existing versions
// (PostgreSQL writes them with COPY, SQLite with INSERTs): unchanged,
// replaced and new entries are counted and read back, and the audit entry
// and the file's receipt commit with them.
func TestBulkStageCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		if _, err := db.StageMetered(ctx, audit("p1", "api"), []pipeline.MeteredEntry{
			meteredDay("10000000001", 1), meteredDay("10000000002", 1)}); err != nil {
			t.Fatal(err)
		}
		claim, st := claimAndBegin(t, db)
		defer st.Rollback()
		for _, batch := range [][]pipeline.MeteredEntry{
			{meteredDay("10000000001", 1), meteredDay("10000000002", 2), meteredDay("10000000003", 3)},
			{meteredDay("10000000004", 4)},
		} {
			if err := st.Metered(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		a := audit("p1", "file")
		res, err := st.Commit(ctx, claim.ID, "me", "processed/p1/2026-11-22/a.csv", a,
			func(r pipeline.StageResult) ([]byte, error) { return []byte(`{"ok":true}`), nil })
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != 2 || res.Replaced != 1 || res.Unchanged != 1 || res.Status != pipeline.Replaced || res.Version != 2 {
			t.Errorf("result = %+v", res)
		}
		for malo, want := range map[string]float64{"10000000001": 1, "10000000002": 2, "10000000003": 3, "10000000004": 4} {
			got, err := db.MeteredDay(ctx, "p1", malo, meteredDay(malo, 0).Day)
			if err != nil || got.Values[95] != want || (malo == "10000000002") != (got.Version.Version == 2) {
				t.Errorf("%s = %+v, %v", malo, got, err)
			}
			if malo != "10000000001" && got.InputHash != "file" {
				t.Errorf("%s input hash = %q", malo, got.InputHash)
			}
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 5 {
			t.Errorf("versions = %d, want 5", n)
		}
		if _, err := db.AuditByHash(ctx, "p1", "file"); err != nil {
			t.Errorf("audit of the file: %v", err)
		}
	})
}

// TestSQLiteBusyIsUnavailable: while a bulk file holds SQLite's write lock,
// an API write waits for the busy timeout and then fails as Unavailable (503
// with Retry-After), not as an internal error; once the file is done it goes
// through.
func TestSQLiteBusyIsUnavailable(t *testing.T) {
	ctx := context.Background()
	db := openSQLiteFile(t, filepath.Join(t.TempDir(), "busy.db"), sqldb.Options{BusyTimeout: 50 * time.Millisecond})
	seedPortfolio(t, db, "p1")
	st, err := db.BeginBulk(ctx, "metered", "p1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000001", 1)}); err != nil {
		t.Fatal(err)
	}
	_, err = db.StageMetered(ctx, audit("p1", "api"), []pipeline.MeteredEntry{meteredDay("10000000002", 1)})
	if pipeline.KindOf(err) != pipeline.Unavailable || !strings.Contains(pipeline.MessageOf(err), "retry") {
		t.Errorf("write during bulk = %v (%s), want unavailable", err, pipeline.KindOf(err))
	}
	st.Rollback()
	if _, err := db.StageMetered(ctx, audit("p1", "api"), []pipeline.MeteredEntry{meteredDay("10000000002", 1)}); err != nil {
		t.Errorf("write after bulk: %v", err)
	}
}

// TestBulkStageFirstLoad: a file staged into a table where the portfolio has
// no current version skips the lookup of current versions (BulkStage.add);
// its entries are all created, another portfolio's versions do not count,
// and a key repeated in a later batch is still refused by the unique index
// of current rows, failing the staging so that nothing is committed.
func TestBulkStageFirstLoad(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		if _, err := db.StageMetered(ctx, audit("p2", "api"), []pipeline.MeteredEntry{meteredDay("10000000001", 1)}); err != nil {
			t.Fatal(err)
		}
		claim, st := claimAndBegin(t, db)
		defer st.Rollback()
		for _, batch := range [][]pipeline.MeteredEntry{
			{meteredDay("10000000001", 1), meteredDay("10000000002", 2)},
			{meteredDay("10000000003", 3)},
		} {
			if err := st.Metered(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		res, err := st.Commit(ctx, claim.ID, "me", "processed/p1/2026-11-22/a.csv", audit("p1", "file"),
			func(r pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
		if err != nil || res.Created != 3 || res.Replaced != 0 || res.Unchanged != 0 || res.Version != 1 || res.Status != pipeline.Created {
			t.Fatalf("commit = %+v, %v", res, err)
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 3 {
			t.Errorf("p1 versions = %d, want 3", n)
		}

		// A fresh portfolio whose file repeats a key across batches. On
		// PostgreSQL a first load streams its batches into one COPY, which
		// reports the violation when it ends, at the commit at the latest.
		seedPortfolio(t, db, "p3")
		c3, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p3/metered-data/a.csv", "e1"), "me", t0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim = %v, %v", ok, err)
		}
		st, err = db.BeginBulk(ctx, "metered", "p3", t0)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Rollback()
		if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000001", 1)}); err != nil {
			t.Fatal(err)
		}
		err = st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000001", 2)})
		if err == nil {
			_, err = st.Commit(ctx, c3.ID, "me", "processed/p3/2026-11-22/a.csv", audit("p3", "file"),
				func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
		}
		if err == nil {
			t.Fatal("a repeated key of a first load was staged")
		}
		st.Rollback()
		if n, _ := db.CountVersions(ctx, "metered", "p3", false); n != 0 {
			t.Errorf("p3 versions after the failed file = %d, want 0", n)
		}
	})
}

// claimAndBegin claims p1's metered-data file a.csv as "me" and begins its
// bulk staging of metered days.
func claimAndBegin(t *testing.T, db *sqldb.DB) (pipeline.InboxFile, *sqldb.BulkStage) {
	t.Helper()
	ctx := context.Background()
	claim, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/a.csv", "e1"), "me", t0, time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	st, err := db.BeginBulk(ctx, "metered", "p1", t0)
	if err != nil {
		t.Fatal(err)
	}
	return claim, st
}

// TestBulkStageSQLiteSettings: on SQLite a bulk file's connection commits
// with synchronous=FULL and without the automatic checkpoint, and runs the
// checkpoint after the commit; the connection then goes back to the pool
// with the pool's settings (NORMAL, a checkpoint every 1,000 pages), after a
// commit and after a rollback alike. The pool has one connection, so the
// queries after Commit and Rollback run on the bulk file's connection.
func TestBulkStageSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "one.db")
	db := openSQLiteFile(t, path, sqldb.Options{MaxOpenConns: 1})
	seedPortfolio(t, db, "p1")
	settings := func(when string) {
		t.Helper()
		for q, want := range map[string]string{"PRAGMA synchronous": "1", "PRAGMA wal_autocheckpoint": "1000", "PRAGMA foreign_keys": "1"} {
			if got, err := sqldb.QueryString(ctx, db, q); err != nil || got != want {
				t.Errorf("%s: %s = %q, %v; want %s", when, q, got, err, want)
			}
		}
	}
	settings("before")

	claim, st := claimAndBegin(t, db)
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000001", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, claim.ID, "me", "processed/p1/2026-11-22/a.csv", audit("p1", "file"),
		func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil }); err != nil {
		t.Fatal(err)
	}
	settings("after a commit")
	// The checkpoint after the commit has copied every page from the WAL
	// into the database file, which therefore holds all of them.
	var pages, size int64
	if err := db.SQL().QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else {
		size = fi.Size()
	}
	if size != pages {
		t.Errorf("database file of %d bytes after the commit, want all %d bytes of its pages", size, pages)
	}

	st, err := db.BeginBulk(ctx, "metered", "p1", t0)
	if err != nil {
		t.Fatal(err)
	}
	st.Rollback()
	settings("after a rollback")

	// A violated constraint ends the transaction inside SQLite (INSERT OR
	// ROLLBACK, insertRows): here a key that a file repeats, which the
	// decoder refuses before and the unique index of current rows refuses
	// here, for a portfolio without current versions, whose file looks
	// none up (BulkStage.noCurrent). The stage fails, nothing of it stays,
	// and the connection is usable with the pool's settings.
	seedPortfolio(t, db, "p2")
	claim, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/p2/metered-data/b.csv", "e1"), "me", t0, time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	if st, err = db.BeginBulk(ctx, "metered", "p2", t0); err != nil {
		t.Fatal(err)
	}
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000002", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000002", 2)}); err == nil ||
		!strings.Contains(err.Error(), "UNIQUE constraint failed") {
		t.Errorf("a repeated key = %v, want a violated unique constraint", err)
	}
	// The transaction is gone; nothing after the failed batch may run
	// outside it: no further batch, and no commit of the file's row or
	// audit entry.
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000003", 1)}); err == nil {
		t.Error("a batch after a violated constraint was accepted")
	}
	if _, err := st.Commit(ctx, claim.ID, "me", "processed/p2/2026-11-22/b.csv", audit("p2", "file2"),
		func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil }); err == nil {
		t.Error("the commit after a violated constraint succeeded")
	}
	st.Rollback()
	settings("after a violated constraint")
	if n, err := db.CountVersions(ctx, "metered", "p2", false); err != nil || n != 0 {
		t.Errorf("metered versions = %d, %v; want none", n, err)
	}
	if f, err := db.InboxFile(ctx, claim.ID); err != nil || f.State != pipeline.InboxProcessing {
		t.Errorf("inbox file after the failed stage = %+v, %v; want it still processing", f, err)
	}
	if entries, err := db.AuditByHash(ctx, "p2", "file2"); pipeline.KindOf(err) != pipeline.NotFound {
		t.Errorf("audit entries of the failed file = %+v, %v; want none", entries, err)
	}
	if _, err := db.StageMetered(ctx, audit("p2", "api"), []pipeline.MeteredEntry{meteredDay("10000000002", 3)}); err != nil {
		t.Errorf("staging after the violated constraint: %v", err)
	}
}

// openSQLiteFile opens and migrates a SQLite database at path with the
// options o, for tests that need a setting of their own; it is closed when
// the test ends.
func openSQLiteFile(t *testing.T, path string, o sqldb.Options) *sqldb.DB {
	t.Helper()
	o.URL = "sqlite:" + path
	db, err := sqldb.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestTouchKeyDuringBulk: recording a key's use does not wait SQLite's busy
// timeout while a bulk file holds the write lock. The timeout here is an
// hour, so a touch that waited for it would hang the test: it fails at
// once as Unavailable instead, the connection it used goes back to the pool
// with the hour, and once the file is done the use is recorded.
func TestTouchKeyDuringBulk(t *testing.T) {
	ctx := context.Background()
	db := openSQLiteFile(t, filepath.Join(t.TempDir(), "touch.db"), sqldb.Options{BusyTimeout: time.Hour, MaxOpenConns: 2})
	seedPortfolio(t, db, "p1")
	if err := db.CreateKey(ctx, pipeline.APIKey{ID: "key_a", Scope: pipeline.ScopeData, PortfolioID: "p1", CreatedAt: t0}, "h"); err != nil {
		t.Fatal(err)
	}
	st, err := db.BeginBulk(ctx, "metered", "p1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Metered(ctx, []pipeline.MeteredEntry{meteredDay("10000000001", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchKey(ctx, "key_a", t0); pipeline.KindOf(err) != pipeline.Unavailable {
		t.Errorf("touch during the bulk file = %v, want unavailable", err)
	}
	if got, err := sqldb.QueryString(ctx, db, "PRAGMA busy_timeout"); err != nil || got != "3600000" {
		t.Errorf("busy_timeout of the pool after the touch = %q, %v; want 3600000", got, err)
	}
	st.Rollback()
	if err := db.TouchKey(ctx, "key_a", t0); err != nil {
		t.Fatal(err)
	}
	keys, err := db.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(t0) {
		t.Errorf("keys after the file = %+v, %v", keys, err)
	}
}
