package sqldb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// closedFile claims a file under key and takes it to a closed state at the
// given time: processed, rejected or failed.
func closedFile(t *testing.T, db *sqldb.DB, key, etag string, state pipeline.InboxState, at time.Time) pipeline.InboxFile {
	t.Helper()
	ctx := context.Background()
	c, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, etag), "P", at, time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim %s = %v, %v", key, ok, err)
	}
	ev := pipeline.Event{At: at, Kind: "inbox." + string(state), PortfolioID: "p1", Subject: key}
	switch state {
	case pipeline.InboxProcessed:
		err = db.MarkInboxStaged(ctx, c.ID, "P", "processed/p1/"+etag, "created", []byte(`{}`))
	case pipeline.InboxRejected:
		err = db.MarkInboxRejected(ctx, c.ID, "P", "bad", "rejected/p1/"+etag, []byte(`{}`))
	case pipeline.InboxFailed:
		if err := db.FailInboxFile(ctx, c.ID, "P", at, "gave up", "boom", ev); err != nil {
			t.Fatal(err)
		}
		f, _ := db.InboxFile(ctx, c.ID)
		return f
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FinishInboxFile(ctx, c.ID, "P", at, ev); err != nil {
		t.Fatal(err)
	}
	f, err := db.InboxFile(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func eventCount(t *testing.T, db *sqldb.DB, kind string) int {
	t.Helper()
	evs, err := db.Events(context.Background(), pipeline.EventQuery{Kind: kind, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// TestInboxFailed: attempts record their error and give the claim up; the
// last one closes the file as failed with its event; claims of the same
// object are refused until the record is retried, while a new upload under
// the key is a new life.
func TestInboxFailed(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		key := "inbox/p1/metered-data/a.csv"
		a, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "A", t0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim = %v, %v", ok, err)
		}
		if err := db.RecordInboxError(ctx, a.ID, "A", t0.Add(time.Second), "store down"); err != nil {
			t.Fatal(err)
		}
		// The lease ended with the error: B need not wait for it.
		b, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "B", t0.Add(2*time.Second), time.Minute)
		if err != nil || !ok || b.ID != a.ID || b.Attempts != 2 || b.LastError != "store down" {
			t.Fatalf("take-over after a recorded error = %+v, %v, %v", b, ok, err)
		}
		if err := db.RecordInboxError(ctx, a.ID, "A", t0.Add(3*time.Second), "late"); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("error recorded by the old owner: %v", err)
		}
		ev := pipeline.Event{At: t0.Add(time.Minute), Kind: "inbox.failed", PortfolioID: "p1", Subject: key, Data: json.RawMessage(`{"id":1}`)}
		if err := db.FailInboxFile(ctx, b.ID, "A", t0.Add(time.Minute), "gave up", "db down", ev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("fail by the old owner: %v", err)
		}
		if err := db.FailInboxFile(ctx, b.ID, "B", t0.Add(time.Minute), "gave up after 2 attempts: db down", "db down", ev); err != nil {
			t.Fatal(err)
		}
		if err := db.FailInboxFile(ctx, b.ID, "B", t0.Add(time.Minute), "again", "again", ev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("second fail: %v", err)
		}
		f, err := db.InboxFile(ctx, b.ID)
		if err != nil || f.State != pipeline.InboxFailed || f.Reason != "gave up after 2 attempts: db down" ||
			f.LastError != "db down" || f.FinishedAt == nil || !f.FinishedAt.Equal(t0.Add(time.Minute)) || f.RetriedAt != nil {
			t.Fatalf("failed record = %+v, %v", f, err)
		}
		if n := eventCount(t, db, "inbox.failed"); n != 1 {
			t.Errorf("inbox.failed events = %d", n)
		}
		if open, _ := db.OpenInboxFiles(ctx); len(open) != 0 {
			t.Errorf("failed file is open: %+v", open)
		}

		// The same object is refused, whoever claims it and however late.
		got, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "C", t0.Add(time.Hour), time.Minute)
		if err != nil || ok || got.ID != b.ID || got.State != pipeline.InboxFailed {
			t.Fatalf("claim of the failed object = %+v, %v, %v", got, ok, err)
		}
		// A new upload under the key is a file of its own.
		n, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e2"), "C", t0.Add(time.Hour), time.Minute)
		if err != nil || !ok || n.ID == b.ID || n.Attempts != 1 {
			t.Fatalf("claim of a new upload = %+v, %v, %v", n, ok, err)
		}
		if err := db.ReleaseInboxFile(ctx, n.ID, "C"); err != nil {
			t.Fatal(err)
		}

		// Retried: marked once, one event, and the object may be claimed again.
		rev := pipeline.Event{At: t0.Add(2 * time.Hour), Kind: "inbox.retried", PortfolioID: "p1", Subject: key}
		r, err := db.MarkInboxRetried(ctx, b.ID, t0.Add(2*time.Hour), rev)
		if err != nil || r.RetriedAt == nil || !r.RetriedAt.Equal(t0.Add(2*time.Hour)) || r.State != pipeline.InboxFailed {
			t.Fatalf("retried = %+v, %v", r, err)
		}
		again, err := db.MarkInboxRetried(ctx, b.ID, t0.Add(3*time.Hour), rev)
		if err != nil || !again.RetriedAt.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("second retry = %+v, %v", again, err)
		}
		if n := eventCount(t, db, "inbox.retried"); n != 1 {
			t.Errorf("inbox.retried events = %d, want 1", n)
		}
		next, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "C", t0.Add(3*time.Hour), time.Minute)
		if err != nil || !ok || next.ID == b.ID || next.Attempts != 1 {
			t.Fatalf("claim after the retry = %+v, %v, %v", next, ok, err)
		}

		// Only a processing file fails, and only failed records are retried this way.
		st := closedFile(t, db, "inbox/p1/metered-data/s.csv", "s", pipeline.InboxProcessed, t0)
		c, ok, _ := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/t.csv", "t"), "C", t0, time.Minute)
		if !ok {
			t.Fatal("claim of t.csv")
		}
		if err := db.MarkInboxStaged(ctx, c.ID, "C", "processed/p1/t.csv", "created", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.FailInboxFile(ctx, c.ID, "C", t0, "x", "x", ev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("fail of a staged file: %v", err)
		}
		if err := db.RecordInboxError(ctx, c.ID, "C", t0, "move failed"); err != nil {
			t.Errorf("error of a staged file's move: %v", err)
		}
		if _, err := db.MarkInboxRetried(ctx, st.ID, t0, rev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("retry of a processed file as failed: %v", err)
		}
		if _, err := db.MarkInboxRetried(ctx, 9999, t0, rev); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("retry of an unknown file: %v", err)
		}
		if _, err := db.InboxFile(ctx, 9999); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("unknown file: %v", err)
		}
	})
}

// TestInboxRetryClaim: a retry claim holds the key against the scans'
// claims whatever its lease, is taken over by another retry only after its
// lease, and ends with the record marked, one event, and the claim gone.
func TestInboxRetryClaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		key := "inbox/p1/metered-data/r.csv"
		rec := closedFile(t, db, key, "e1", pipeline.InboxRejected, t0)
		lease := time.Minute
		c, resumed, err := db.ClaimInboxRetry(ctx, rec.ID, "X", t0, lease)
		if err != nil || resumed || c.RetryOf != rec.ID || c.State != pipeline.InboxProcessing || c.Key != key || c.Owner != "X" {
			t.Fatalf("retry claim = %+v, %v, %v", c, resumed, err)
		}
		if got, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "scan", t0.Add(time.Hour), lease); err != nil || ok || got.ID != c.ID {
			t.Fatalf("scan's claim beside a retry claim = %+v, %v, %v", got, ok, err)
		}
		if _, _, err := db.ClaimInboxRetry(ctx, rec.ID, "Y", t0.Add(30*time.Second), lease); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("second retry under a live lease: %v", err)
		}
		y, resumed, err := db.ClaimInboxRetry(ctx, rec.ID, "Y", t0.Add(2*time.Minute), lease)
		if err != nil || !resumed || y.ID != c.ID || y.Owner != "Y" {
			t.Fatalf("take-over of the retry = %+v, %v, %v", y, resumed, err)
		}
		ev := pipeline.Event{At: t0.Add(3 * time.Minute), Kind: "inbox.retried", PortfolioID: "p1", Subject: key}
		if _, err := db.FinishInboxRetry(ctx, c.ID, "X", t0.Add(3*time.Minute), ev); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("finish by the old owner: %v", err)
		}
		done, err := db.FinishInboxRetry(ctx, c.ID, "Y", t0.Add(3*time.Minute), ev)
		if err != nil || done.ID != rec.ID || done.State != pipeline.InboxRejected || done.RetriedAt == nil ||
			!done.RetriedAt.Equal(t0.Add(3*time.Minute)) {
			t.Fatalf("finished retry = %+v, %v", done, err)
		}
		if open, _ := db.OpenInboxFiles(ctx); len(open) != 0 {
			t.Errorf("retry claim left: %+v", open)
		}
		if n := eventCount(t, db, "inbox.retried"); n != 1 {
			t.Errorf("inbox.retried events = %d", n)
		}
		if _, _, err := db.ClaimInboxRetry(ctx, rec.ID, "Z", t0.Add(time.Hour), lease); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("retry of a retried record: %v", err)
		}
		// The scans claim the key again.
		if _, ok, err := db.ClaimInboxFile(ctx, inboxFile(key, "e1"), "scan", t0.Add(time.Hour), lease); err != nil || !ok {
			t.Fatalf("scan's claim after the retry = %v, %v", ok, err)
		}

		// A key held by a file being processed is not taken by a retry.
		other := closedFile(t, db, "inbox/p1/metered-data/o.csv", "o1", pipeline.InboxRejected, t0)
		if _, ok, _ := db.ClaimInboxFile(ctx, inboxFile(other.Key, "o2"), "scan", t0, lease); !ok {
			t.Fatal("claim of o.csv")
		}
		if _, _, err := db.ClaimInboxRetry(ctx, other.ID, "X", t0.Add(time.Hour), lease); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("retry beside a processing claim: %v", err)
		}
		// A dropped retry claim is released like a fresh claim.
		third := closedFile(t, db, "inbox/p1/metered-data/d.csv", "d1", pipeline.InboxRejected, t0)
		d, _, err := db.ClaimInboxRetry(ctx, third.ID, "X", t0, lease)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.ReleaseInboxFile(ctx, d.ID, "X"); err != nil {
			t.Fatal(err)
		}
		if f, _ := db.InboxFile(ctx, d.ID); f.ID != 0 {
			t.Errorf("released retry claim = %+v", f)
		}
		if f, _ := db.InboxFile(ctx, third.ID); f.RetriedAt != nil {
			t.Errorf("dropped retry marked the record: %+v", f)
		}

		processed := closedFile(t, db, "inbox/p1/metered-data/p.csv", "p1", pipeline.InboxProcessed, t0)
		if _, _, err := db.ClaimInboxRetry(ctx, processed.ID, "X", t0, lease); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("retry claim of a processed file: %v", err)
		}
		if _, _, err := db.ClaimInboxRetry(ctx, 9999, "X", t0, lease); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("retry claim of an unknown file: %v", err)
		}
	})
}

// TestUnclaimedInboxObjects: the objects that wait for a scan are those
// without an open record and without a failed, not retried record of their
// version.
func TestUnclaimedInboxObjects(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		obj := func(name, etag string) pipeline.ObjectInfo {
			return pipeline.ObjectInfo{Key: "inbox/p1/metered-data/" + name, ETag: etag}
		}
		closedFile(t, db, obj("failed.csv", "f1").Key, "f1", pipeline.InboxFailed, t0)
		closedFile(t, db, obj("replaced.csv", "old").Key, "old", pipeline.InboxFailed, t0)
		retried := closedFile(t, db, obj("retried.csv", "r1").Key, "r1", pipeline.InboxFailed, t0)
		if _, err := db.MarkInboxRetried(ctx, retried.ID, t0, pipeline.Event{At: t0, Kind: "inbox.retried", Subject: retried.Key}); err != nil {
			t.Fatal(err)
		}
		closedFile(t, db, obj("done.csv", "d1").Key, "d1", pipeline.InboxProcessed, t0)
		closedFile(t, db, obj("rejected.csv", "j1").Key, "j1", pipeline.InboxRejected, t0)
		if _, ok, _ := db.ClaimInboxFile(ctx, inboxFile(obj("busy.csv", "b1").Key, "b1"), "A", t0, time.Minute); !ok {
			t.Fatal("claim busy.csv")
		}
		// A stale claim of another version still holds the key.
		if _, ok, _ := db.ClaimInboxFile(ctx, inboxFile(obj("stale.csv", "s0").Key, "s0"), "A", t0, time.Minute); !ok {
			t.Fatal("claim stale.csv")
		}
		back := closedFile(t, db, obj("back.csv", "k1").Key, "k1", pipeline.InboxRejected, t0)
		if _, _, err := db.ClaimInboxRetry(ctx, back.ID, "X", t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		objs := []pipeline.ObjectInfo{obj("back.csv", "k1"), obj("busy.csv", "b1"), obj("done.csv", "d2"), obj("failed.csv", "f1"),
			obj("new.csv", "n1"), obj("rejected.csv", "j1"), obj("replaced.csv", "new"), obj("retried.csv", "r1"), obj("stale.csv", "s1")}
		got, err := db.UnclaimedInboxObjects(ctx, objs)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.Key[len("inbox/p1/metered-data/"):])
		}
		want := []string{"done.csv", "new.csv", "rejected.csv", "replaced.csv", "retried.csv"}
		if !slices.Equal(names, want) {
			t.Errorf("unclaimed = %v, want %v", names, want)
		}
		if got, err := db.UnclaimedInboxObjects(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("no objects = %v, %v", got, err)
		}
		// More objects than one lookup takes are looked up in chunks.
		many := make([]pipeline.ObjectInfo, 2500)
		for i := range many {
			many[i] = obj(fmt.Sprintf("x%04d.csv", i), "e")
		}
		many[2400] = obj("busy.csv", "b1")
		if got, err := db.UnclaimedInboxObjects(ctx, many); err != nil || len(got) != 2499 {
			t.Errorf("2500 objects: %d unclaimed, %v", len(got), err)
		}
	})
}

// TestInboxFilesQuery: the console's filters on the records: state, not
// retried, portfolio, and keyset paging newest first.
func TestInboxFilesQuery(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		rej1 := closedFile(t, db, "inbox/p1/metered-data/r1.csv", "a", pipeline.InboxRejected, t0)
		fail1 := closedFile(t, db, "inbox/p1/metered-data/f1.csv", "b", pipeline.InboxFailed, t0)
		closedFile(t, db, "inbox/p1/metered-data/p1.csv", "c", pipeline.InboxProcessed, t0)
		rej2 := closedFile(t, db, "inbox/p1/metered-data/r2.csv", "d", pipeline.InboxRejected, t0)
		fail2 := closedFile(t, db, "inbox/p1/metered-data/f2.csv", "e", pipeline.InboxFailed, t0)
		rej3 := closedFile(t, db, "inbox/p1/metered-data/r3.csv", "f", pipeline.InboxRejected, t0)
		other, ok, _ := db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: "inbox/p2/metered-data/x.csv", ETag: "g", PortfolioID: "p2"}, "A", t0, time.Minute)
		if !ok {
			t.Fatal("claim of p2's file")
		}
		if _, err := db.MarkInboxRetried(ctx, fail1.ID, t0, pipeline.Event{At: t0, Kind: "inbox.retried", Subject: fail1.Key}); err != nil {
			t.Fatal(err)
		}
		c, _, err := db.ClaimInboxRetry(ctx, rej2.ID, "X", t0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.FinishInboxRetry(ctx, c.ID, "X", t0, pipeline.Event{At: t0, Kind: "inbox.retried", Subject: rej2.Key}); err != nil {
			t.Fatal(err)
		}
		ids := func(q pipeline.InboxQuery) []int64 {
			t.Helper()
			fs, err := db.InboxFiles(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, f := range fs {
				out = append(out, f.ID)
			}
			return out
		}
		problems := []pipeline.InboxState{pipeline.InboxFailed, pipeline.InboxRejected}
		if got, want := ids(pipeline.InboxQuery{States: problems, Limit: 10}), []int64{rej3.ID, fail2.ID, rej2.ID, fail1.ID, rej1.ID}; !slices.Equal(got, want) {
			t.Errorf("failed and rejected = %v, want %v", got, want)
		}
		if got, want := ids(pipeline.InboxQuery{States: problems, NotRetried: true, Limit: 10}), []int64{rej3.ID, fail2.ID, rej1.ID}; !slices.Equal(got, want) {
			t.Errorf("not retried = %v, want %v", got, want)
		}
		if got, want := ids(pipeline.InboxQuery{States: []pipeline.InboxState{pipeline.InboxFailed}, Limit: 10}), []int64{fail2.ID, fail1.ID}; !slices.Equal(got, want) {
			t.Errorf("failed = %v, want %v", got, want)
		}
		// Pages of two, newest first, each after the last id of the one before.
		var pages [][]int64
		before := int64(0)
		for {
			page := ids(pipeline.InboxQuery{States: problems, BeforeID: before, Limit: 2})
			if len(page) == 0 {
				break
			}
			pages = append(pages, page)
			before = page[len(page)-1]
		}
		if len(pages) != 3 || !slices.Equal(pages[0], []int64{rej3.ID, fail2.ID}) || !slices.Equal(pages[2], []int64{rej1.ID}) {
			t.Errorf("pages = %v", pages)
		}
		if got := ids(pipeline.InboxQuery{Portfolio: "p2", Limit: 10}); !slices.Equal(got, []int64{other.ID}) {
			t.Errorf("p2's files = %v", got)
		}
		fs, _ := db.InboxFiles(ctx, pipeline.InboxQuery{States: []pipeline.InboxState{pipeline.InboxFailed}, Limit: 1})
		if len(fs) != 1 || fs[0].LastError != "boom" || fs[0].Reason != "gave up" || fs[0].RetriedAt != nil {
			t.Errorf("failed record read back = %+v", fs)
		}
	})
}

// TestInboxCounts: open records, failed ones not retried and rejected ones
// finished since a time.
func TestInboxCounts(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if c, err := db.InboxCounts(ctx, t0); err != nil || c != (pipeline.InboxCounts{}) {
			t.Fatalf("empty counts = %+v, %v", c, err)
		}
		closedFile(t, db, "inbox/p1/metered-data/old-r.csv", "a", pipeline.InboxRejected, t0.Add(-2*time.Hour))
		closedFile(t, db, "inbox/p1/metered-data/old-f.csv", "b", pipeline.InboxFailed, t0.Add(-2*time.Hour))
		closedFile(t, db, "inbox/p1/metered-data/r1.csv", "c", pipeline.InboxRejected, t0)
		closedFile(t, db, "inbox/p1/metered-data/r2.csv", "d", pipeline.InboxRejected, t0.Add(time.Hour))
		closedFile(t, db, "inbox/p1/metered-data/f1.csv", "e", pipeline.InboxFailed, t0)
		f2 := closedFile(t, db, "inbox/p1/metered-data/f2.csv", "f", pipeline.InboxFailed, t0.Add(time.Minute))
		closedFile(t, db, "inbox/p1/metered-data/p.csv", "g", pipeline.InboxProcessed, t0)
		if _, err := db.MarkInboxRetried(ctx, f2.ID, t0.Add(time.Hour), pipeline.Event{At: t0, Kind: "inbox.retried", Subject: f2.Key}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a1.csv", "a2.csv"} {
			if _, ok, _ := db.ClaimInboxFile(ctx, inboxFile("inbox/p1/metered-data/"+k, "x"), "A", t0, time.Minute); !ok {
				t.Fatalf("claim %s", k)
			}
		}
		c, err := db.InboxCounts(ctx, t0)
		if err != nil || c != (pipeline.InboxCounts{Processing: 2, Failed: 1, Rejected: 2}) {
			t.Errorf("counts since t0 = %+v, %v", c, err)
		}
		c, err = db.InboxCounts(ctx, t0.Add(-3*time.Hour))
		if err != nil || c != (pipeline.InboxCounts{Processing: 2, Failed: 2, Rejected: 3}) {
			t.Errorf("counts since t0-3h = %+v, %v", c, err)
		}
		c, err = db.InboxCounts(ctx, t0.Add(2*time.Hour))
		if err != nil || c != (pipeline.InboxCounts{Processing: 2}) {
			t.Errorf("counts since t0+2h = %+v, %v", c, err)
		}
	})
}

// TestInboxRetryMigrationDownUp reverts the retry migration over records of
// every kind and applies it again: the retry claim goes, the other records
// stay, and the columns are back.
func TestInboxRetryMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261128000001"); err != nil {
				t.Fatal(err)
			}
			if err := sqldb.MigrateThrough(ctx, db, "20261128000002"); err != nil {
				t.Fatal(err)
			}
			closedFile(t, db, "inbox/p1/metered-data/f.csv", "f", pipeline.InboxFailed, t0)
			rej := closedFile(t, db, "inbox/p1/metered-data/r.csv", "r", pipeline.InboxRejected, t0)
			if _, _, err := db.ClaimInboxRetry(ctx, rej.ID, "X", t0, time.Minute); err != nil {
				t.Fatal(err)
			}
			back, err := sqldb.RollbackLast(ctx, db)
			if err != nil || !slices.Equal(back, []string{"20261128000002"}) {
				t.Fatalf("rollback = %v, %v", back, err)
			}
			if _, err := sqldb.QueryString(ctx, db, "SELECT COUNT(retried_at) FROM inbox_files"); err == nil {
				t.Error("retried_at still there after the rollback")
			}
			if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM inbox_files"); err != nil || n != "2" {
				t.Errorf("records after the rollback = %s, %v", n, err)
			}
			if err := sqldb.MigrateThrough(ctx, db, "20261128000002"); err != nil {
				t.Fatal(err)
			}
			if f, err := db.InboxFile(ctx, rej.ID); err != nil || f.State != pipeline.InboxRejected || f.RetriedAt != nil {
				t.Errorf("rejected record after down and up = %+v, %v", f, err)
			}
		})
	}
}
