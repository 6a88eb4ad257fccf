package inbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

// brokenStore fails the steps a test names, as a database that is down or
// a process that stops between two steps would.
type brokenStore struct {
	store
	mu sync.Mutex
	// failBegin makes BeginBulk fail: n times, or always while negative.
	failBegin int
	// failFinishRetry makes FinishInboxRetry fail n times, as a crash
	// after the move back and before the mark would.
	failFinishRetry int
}

// take reports whether the counter says fail, and counts the failure down.
func (s *brokenStore) take(n *int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *n == 0 {
		return false
	}
	if *n > 0 {
		*n--
	}
	return true
}

func (s *brokenStore) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (inbox.Stager, error) {
	if s.take(&s.failBegin) {
		// The text carries what a careless driver might print; none of it
		// may reach the record.
		return nil, errors.New("injected: connect postgres://app:s3cret@db:5432/x failed (password=s3cret)")
	}
	return s.store.BeginBulk(ctx, kind, portfolio, now)
}

func (s *brokenStore) FinishInboxRetry(ctx context.Context, claimID int64, owner string, now time.Time, ev pipeline.Event) (pipeline.InboxFile, error) {
	if s.take(&s.failFinishRetry) {
		return pipeline.InboxFile{}, errors.New("injected crash after the move back")
	}
	return s.store.FinishInboxRetry(ctx, claimID, owner, now, ev)
}

// halfMoveBucket's Move copies and stops before deleting the source, as a
// move on S3 (a copy and a delete) interrupted in between would.
type halfMoveBucket struct {
	objstore.Bucket
	mu    sync.Mutex
	moves int
}

func (b *halfMoveBucket) Move(ctx context.Context, src, dst string) error {
	b.mu.Lock()
	half := b.moves > 0
	b.moves--
	b.mu.Unlock()
	if !half {
		return b.Bucket.Move(ctx, src, dst)
	}
	rc, err := b.Get(ctx, src)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return err
	}
	if err := b.Put(ctx, dst, bytes.NewReader(data), int64(len(data))); err != nil {
		return err
	}
	return errors.New("injected crash between the copy and the delete")
}

func (e *env) processorOn(t *testing.T, b inbox.Bucket, s inbox.Store, owner string, mod ...func(*inbox.Config)) *inbox.Processor {
	t.Helper()
	cfg := inbox.Config{Owner: owner, Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir()}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := inbox.New(b, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) files(t *testing.T, states ...pipeline.InboxState) []pipeline.InboxFile {
	t.Helper()
	fs, err := e.db.InboxFiles(context.Background(), pipeline.InboxQuery{States: states, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func (e *env) events(t *testing.T, kind string) []pipeline.Event {
	t.Helper()
	evs, err := e.db.Events(context.Background(), pipeline.EventQuery{Kind: kind, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func (e *env) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.bucket.Stat(context.Background(), key)
	if err != nil && !objstore.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (e *env) addPortfolio(t *testing.T, id string) {
	t.Helper()
	p := pipeline.Portfolio{ID: id, Name: "Late " + id, ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}
	if _, err := e.db.PutPortfolio(context.Background(), p, t0); err != nil {
		t.Fatal(err)
	}
}

func (e *env) versionsOf(t *testing.T, portfolio string) int {
	t.Helper()
	n, err := e.db.CountVersions(context.Background(), "metered", portfolio, false)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rejectUnknown drops a file for the portfolio p9, which does not exist
// yet, and scans: the file is rejected. It returns the record.
func rejectUnknown(t *testing.T, e *env, p *inbox.Processor) pipeline.InboxFile {
	t.Helper()
	e.put(t, "inbox/p9/metered-data/m.csv", meteredCSV(";", twoDays...))
	if sum := scan(t, p); sum.Rejected != 1 {
		t.Fatalf("scan of a file for an unknown portfolio = %+v", sum)
	}
	rej := e.files(t, pipeline.InboxRejected)
	if len(rej) != 1 || rej[0].DestKey != "rejected/p9/m.csv" || !strings.Contains(rej[0].Reason, "unknown portfolio") {
		t.Fatalf("rejected = %+v", rej)
	}
	return rej[0]
}

// TestRetryRejected: a file rejected for an unknown portfolio is retried
// once the portfolio exists; it is moved back, processed by the next scan
// as a new life, staged once and given its receipt. A second Retry returns
// the same record and moves nothing.
func TestRetryRejected(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.processor(t, "A")
		rec := rejectUnknown(t, e, p)
		e.addPortfolio(t, "p9")
		e.clock.Add(time.Minute)

		got, err := p.Retry(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != rec.ID || got.State != pipeline.InboxRejected || got.RetriedAt == nil || !got.RetriedAt.Equal(e.clock.Now()) {
			t.Fatalf("retried record = %+v", got)
		}
		if !e.exists(t, rec.Key) || e.exists(t, rec.DestKey) {
			t.Fatalf("after the retry: inbox %v, rejected/ %v; want the file back in the inbox", e.exists(t, rec.Key), e.exists(t, rec.DestKey))
		}
		if !e.exists(t, rec.DestKey+".errors.json") {
			t.Error("the errors document of the rejection went")
		}
		evs := e.events(t, "inbox.retried")
		if len(evs) != 1 || evs[0].Subject != rec.Key || evs[0].PortfolioID != "p9" || !strings.Contains(string(evs[0].Data), `"from":"rejected/p9/m.csv"`) {
			t.Fatalf("retry events = %+v", evs)
		}

		if sum := scan(t, p); sum.Processed != 1 || sum.Rejected != 0 {
			t.Fatalf("scan after the retry = %+v", sum)
		}
		r := receipt(t, e, "processed/p9/2026-11-22/m.csv")
		if r.Status != "created" || r.Counts["created"] != 2 || r.ID == rec.ID || r.Attempts != 1 {
			t.Errorf("receipt = %+v, want a new life that created 2 entries", r)
		}
		if n := e.versionsOf(t, "p9"); n != 2 {
			t.Fatalf("versions = %d, want 2", n)
		}

		e.clock.Add(time.Minute)
		again, err := p.Retry(ctx, rec.ID)
		if err != nil || !again.RetriedAt.Equal(*got.RetriedAt) {
			t.Fatalf("second retry = %+v, %v; want the same record", again, err)
		}
		if sum := scan(t, p); sum.Seen != 0 {
			t.Fatalf("scan after the second retry = %+v", sum)
		}
		if n := e.versionsOf(t, "p9"); n != 2 || len(e.events(t, "inbox.retried")) != 1 || len(e.keys(t, "inbox/")) != 0 {
			t.Errorf("second retry changed something: versions %d, events %d, inbox %v",
				n, len(e.events(t, "inbox.retried")), e.keys(t, "inbox/"))
		}
		if open, _ := e.db.OpenInboxFiles(ctx); len(open) != 0 {
			t.Errorf("open records = %+v", open)
		}
	})
}

// TestRetryRefusals: Retry never overwrites a new drop at the inbox key,
// refuses processed and open records and knows no unknown one.
func TestRetryRefusals(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.processor(t, "A")
		rec := rejectUnknown(t, e, p)
		e.addPortfolio(t, "p9")
		newer := meteredCSV(",", day("12345678909", "2026-11-20", 96, 9))
		e.put(t, rec.Key, newer)

		_, err := p.Retry(ctx, rec.ID)
		if pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(pipeline.MessageOf(err), "another file sits at its inbox key") {
			t.Fatalf("retry onto a new drop = %v (%s)", err, pipeline.KindOf(err))
		}
		if !bytes.Equal(e.get(t, rec.Key), newer) || !e.exists(t, rec.DestKey) {
			t.Fatal("the refused retry moved something")
		}
		if f, _ := e.db.InboxFile(ctx, rec.ID); f.RetriedAt != nil {
			t.Errorf("refused retry marked the record: %+v", f)
		}
		if open, _ := e.db.OpenInboxFiles(ctx); len(open) != 0 {
			t.Errorf("refused retry left a claim: %+v", open)
		}
		// The new drop is a file of its own; once it is gone the retry goes through.
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan of the new drop = %+v", sum)
		}
		if _, err := p.Retry(ctx, rec.ID); err != nil {
			t.Fatalf("retry once the key is free: %v", err)
		}
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan after the retry = %+v", sum)
		}
		processed := e.files(t, pipeline.InboxProcessed)
		if len(processed) != 2 {
			t.Fatalf("processed = %+v", processed)
		}

		_, err = p.Retry(ctx, processed[0].ID)
		if pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(pipeline.MessageOf(err), "was processed") {
			t.Errorf("retry of a processed file = %v", err)
		}
		if _, err := p.Retry(ctx, 424242); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("retry of an unknown file = %v", err)
		}
		claim, ok, err := e.db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: "inbox/p1/metered-data/open.csv", ETag: "x"}, "B", e.clock.Now(), time.Minute)
		if err != nil || !ok {
			t.Fatal(err)
		}
		if _, err := p.Retry(ctx, claim.ID); pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(pipeline.MessageOf(err), "still processing") {
			t.Errorf("retry of an open file = %v", err)
		}

		// A rejected file that someone removed from rejected/ has nothing to retry.
		gone := rejectUnknownAs(t, e, p, "inbox/p8/metered-data/g.csv")
		if err := e.bucket.Delete(ctx, gone.DestKey); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Retry(ctx, gone.ID); pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(pipeline.MessageOf(err), "no longer in the bucket") {
			t.Errorf("retry of a vanished rejected file = %v", err)
		}
	})
}

func rejectUnknownAs(t *testing.T, e *env, p *inbox.Processor, key string) pipeline.InboxFile {
	t.Helper()
	e.put(t, key, meteredCSV(";", twoDays...))
	if sum := scan(t, p); sum.Rejected != 1 {
		t.Fatalf("scan of %s = %+v", key, sum)
	}
	for _, f := range e.files(t, pipeline.InboxRejected) {
		if f.Key == key {
			return f
		}
	}
	t.Fatalf("no rejected record of %s", key)
	return pipeline.InboxFile{}
}

// TestFailedAfterMaxAttempts: a file whose staging fails for a reason that
// is not its own is tried MaxAttempts times, each error recorded without
// its secrets, then closed as failed with its event; the scans skip it,
// Pending leaves it out, and after Retry it is processed exactly once. A
// new upload under a failed file's key is processed as usual.
func TestFailedAfterMaxAttempts(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		bs := &brokenStore{store: store{e.db}, failBegin: -1}
		p := e.processorOn(t, e.bucket, bs, "A", func(c *inbox.Config) { c.MaxAttempts = 3 })
		key := "inbox/p1/metered-data/f.csv"
		e.put(t, key, meteredCSV(";", twoDays...))

		for attempt := 1; attempt <= 2; attempt++ {
			if sum := scan(t, p); sum.Failed != 1 {
				t.Fatalf("attempt %d: scan = %+v", attempt, sum)
			}
			open, _ := e.db.OpenInboxFiles(ctx)
			if len(open) != 1 || open[0].Attempts != attempt || !strings.Contains(open[0].LastError, "injected") {
				t.Fatalf("attempt %d: open = %+v", attempt, open)
			}
			if strings.Contains(open[0].LastError, "s3cret") {
				t.Fatalf("recorded error shows the password: %q", open[0].LastError)
			}
			e.clock.Add(time.Second)
		}
		// The last attempt fails too: the file is given up on.
		if sum := scan(t, p); sum.Failed != 1 {
			t.Fatalf("last attempt: scan = %+v", sum)
		}
		failed := e.files(t, pipeline.InboxFailed)
		if len(failed) != 1 || failed[0].Attempts != 3 || !strings.HasPrefix(failed[0].Reason, "gave up after 3 attempts: ") ||
			strings.Contains(failed[0].Reason, "s3cret") || failed[0].FinishedAt == nil {
			t.Fatalf("failed = %+v", failed)
		}
		rec := failed[0]
		if evs := e.events(t, "inbox.failed"); len(evs) != 1 || evs[0].Subject != key || strings.Contains(string(evs[0].Data), "s3cret") {
			t.Fatalf("failed events = %+v", evs)
		}
		if open, _ := e.db.OpenInboxFiles(ctx); len(open) != 0 {
			t.Fatalf("open after failing = %+v", open)
		}

		// Skipped by every process, and not pending, while not retried.
		bs.failBegin = 0
		for _, q := range []*inbox.Processor{p, e.processor(t, "B")} {
			if sum := scan(t, q); sum.Skipped != 1 || sum.Processed != 0 || sum.Failed != 0 {
				t.Fatalf("scan of the failed file = %+v", sum)
			}
		}
		if pending, more, err := p.Pending(ctx, "", "", 10); err != nil || len(pending) != 0 || more {
			t.Errorf("pending = %+v, %v, %v", pending, more, err)
		}
		if !e.exists(t, key) || e.versions(t) != 0 {
			t.Fatal("the failed file left the inbox or staged something")
		}

		got, err := p.Retry(ctx, rec.ID)
		if err != nil || got.ID != rec.ID || got.State != pipeline.InboxFailed || got.RetriedAt == nil {
			t.Fatalf("retry = %+v, %v", got, err)
		}
		if pending, _, _ := p.Pending(ctx, "", "", 10); len(pending) != 1 || pending[0].Key != key {
			t.Errorf("pending after the retry = %+v", pending)
		}
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan after the retry = %+v", sum)
		}
		if r := receipt(t, e, processedDir+"f.csv"); r.ID == rec.ID || r.Attempts != 1 || r.Counts["created"] != 2 {
			t.Errorf("receipt = %+v", r)
		}
		again, err := p.Retry(ctx, rec.ID)
		if err != nil || !again.RetriedAt.Equal(*got.RetriedAt) {
			t.Errorf("second retry = %+v, %v", again, err)
		}
		if sum := scan(t, p); sum.Seen != 0 || e.versions(t) != 2 || len(e.events(t, "inbox.retried")) != 1 {
			t.Errorf("after the second retry: scan %+v, versions %d, retry events %d", sum, e.versions(t), len(e.events(t, "inbox.retried")))
		}

		// A new upload under a failed file's key is a file of its own.
		bs.failBegin = 3
		key2 := "inbox/p1/metered-data/g.csv"
		e.put(t, key2, meteredCSV(";", day("12345678905", "2026-11-20", 96, 5)))
		for range 3 {
			scan(t, p)
		}
		if f := e.files(t, pipeline.InboxFailed); len(f) != 2 || f[0].Key != key2 || f[0].RetriedAt != nil {
			t.Fatalf("second failed file = %+v", f)
		}
		e.put(t, key2, meteredCSV(";", day("12345678906", "2026-11-20", 96, 6)))
		if sum := scan(t, p); sum.Processed != 1 || sum.Skipped != 0 {
			t.Fatalf("scan of the new upload = %+v", sum)
		}
		if n := e.versions(t); n != 3 {
			t.Errorf("versions = %d, want 3", n)
		}
	})
}

// TestFailedAfterCrashes: attempts whose process stopped count as well, so a
// file that crashes its process is given up on instead of taken up forever.
func TestFailedAfterCrashes(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	key := "inbox/p1/metered-data/c.csv"
	e.put(t, key, meteredCSV(";", twoDays...))
	objs, _ := e.bucket.List(ctx, key, "", 1)
	for i := range 2 {
		// Each "crashed" owner claims and is never heard of again.
		f := pipeline.InboxFile{Key: key, ETag: objs[0].ETag, Size: objs[0].Size, PortfolioID: "p1", Kind: "metered-data", Name: "c.csv"}
		if _, ok, err := e.db.ClaimInboxFile(ctx, f, string(rune('X'+i)), e.clock.Now(), time.Minute); err != nil || !ok {
			t.Fatalf("crashed claim %d: %v, %v", i, ok, err)
		}
		e.clock.Add(2 * time.Minute)
	}
	p := e.processor(t, "A", func(c *inbox.Config) { c.MaxAttempts = 2 })
	if sum := scan(t, p); sum.Failed != 1 || sum.Processed != 0 {
		t.Fatalf("scan after two crashed attempts = %+v", sum)
	}
	f := e.files(t, pipeline.InboxFailed)
	if len(f) != 1 || !strings.Contains(f[0].Reason, "gave up after 2 attempts; the last one ended without an outcome") {
		t.Fatalf("failed = %+v", f)
	}
	if e.versions(t) != 0 || !e.exists(t, key) {
		t.Error("the given-up file staged or moved")
	}
}

// TestRetryInterrupted interrupts a retry of a rejected file at each step
// and checks that the next Retry or scan ends it as an uninterrupted one
// would: the file processed once, the record marked once.
func TestRetryInterrupted(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		check := func(t *testing.T, rec pipeline.InboxFile, versions int) {
			t.Helper()
			if f, _ := e.db.InboxFile(ctx, rec.ID); f.RetriedAt == nil {
				t.Errorf("record not marked: %+v", f)
			}
			if open, _ := e.db.OpenInboxFiles(ctx); len(open) != 0 {
				t.Errorf("open records = %+v", open)
			}
			if e.exists(t, rec.Key) || e.exists(t, rec.DestKey) {
				t.Errorf("left over: inbox %v, rejected/ %v", e.exists(t, rec.Key), e.exists(t, rec.DestKey))
			}
			if n := e.versionsOf(t, "p9"); n != versions {
				t.Errorf("versions = %d, want %d", n, versions)
			}
		}
		p := e.processor(t, "A")
		e.addPortfolio(t, "p9")

		// 1. Stopped after the move and before the mark: the next scan
		// finishes the retry and then processes the file.
		e.put(t, "inbox/p9/metered-data/m.csv", []byte("not a csv"))
		sum := scan(t, p)
		if sum.Rejected != 1 {
			t.Fatalf("scan = %+v", sum)
		}
		rec := e.files(t, pipeline.InboxRejected)[0]
		e.put(t, rec.DestKey, meteredCSV(";", twoDays...)) // an operator fixed the file in rejected/
		bs := &brokenStore{store: store{e.db}, failFinishRetry: 1}
		pb := e.processorOn(t, e.bucket, bs, "B")
		if _, err := pb.Retry(ctx, rec.ID); err == nil {
			t.Fatal("retry with the injected crash succeeded")
		}
		if !e.exists(t, rec.Key) || e.exists(t, rec.DestKey) {
			t.Fatal("the interrupted retry did not move the file")
		}
		if sum := scan(t, e.processor(t, "C")); sum.Processed != 1 || sum.Busy != 0 {
			t.Fatalf("scan after the interrupted retry = %+v", sum)
		}
		check(t, rec, 2)
		if n := len(e.events(t, "inbox.retried")); n != 1 {
			t.Errorf("retry events = %d", n)
		}

		// 2. Stopped before the move: the next Retry moves the file, and so
		// does the sweep of the next scan when no Retry comes.
		for i, resume := range []string{"retry", "scan"} {
			key := "inbox/p9/metered-data/" + resume + ".csv"
			e.put(t, key, []byte("not a csv"))
			if sum := scan(t, p); sum.Rejected != 1 {
				t.Fatalf("%s: scan = %+v", resume, sum)
			}
			var rec2 pipeline.InboxFile
			for _, f := range e.files(t, pipeline.InboxRejected) {
				if f.Key == key {
					rec2 = f
				}
			}
			e.put(t, rec2.DestKey, meteredCSV(";", day("1234567891"+string(rune('0'+i)), "2026-11-20", 96, 3)))
			fb := &failingBucket{Bucket: e.bucket, failMoves: 1}
			pf := e.processorOn(t, fb, store{e.db}, "D")
			if _, err := pf.Retry(ctx, rec2.ID); err == nil {
				t.Fatalf("%s: retry with the failing move succeeded", resume)
			}
			if e.exists(t, rec2.Key) || !e.exists(t, rec2.DestKey) {
				t.Fatalf("%s: the failed move moved the file", resume)
			}
			if f, _ := e.db.InboxFile(ctx, rec2.ID); f.RetriedAt != nil {
				t.Fatalf("%s: the record is marked while its file is still in rejected/", resume)
			}
			before := e.versionsOf(t, "p9")
			if resume == "retry" {
				if got, err := pf.Retry(ctx, rec2.ID); err != nil || got.RetriedAt == nil {
					t.Fatalf("retry after the failed move = %+v, %v", got, err)
				}
			}
			if sum := scan(t, p); sum.Processed != 1 {
				t.Fatalf("%s: scan = %+v", resume, sum)
			}
			check(t, rec2, before+1)
		}
		if n := len(e.events(t, "inbox.retried")); n != 3 {
			t.Errorf("retry events = %d, want 3", n)
		}

		// 3. On S3 a move is a copy and a delete: stopped in between, the
		// object is at both keys, and the scans must not process the copy
		// while the original still waits in rejected/ for a second move.
		if e.s3 == nil {
			return // the directory store renames atomically
		}
		e.put(t, "inbox/p9/metered-data/h.csv", []byte("not a csv"))
		scan(t, p)
		var rec3 pipeline.InboxFile
		for _, f := range e.files(t, pipeline.InboxRejected) {
			if f.Key == "inbox/p9/metered-data/h.csv" {
				rec3 = f
			}
		}
		e.put(t, rec3.DestKey, meteredCSV(";", day("12345678907", "2026-11-20", 96, 7)))
		hb := &halfMoveBucket{Bucket: e.bucket, moves: 1}
		ph := e.processorOn(t, hb, store{e.db}, "E")
		if _, err := ph.Retry(ctx, rec3.ID); err == nil {
			t.Fatal("retry with the half move succeeded")
		}
		if !e.exists(t, rec3.Key) || !e.exists(t, rec3.DestKey) {
			t.Fatal("the half move did not leave the object at both keys")
		}
		before := e.versionsOf(t, "p9")
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan after the half move = %+v", sum)
		}
		check(t, rec3, before+1)
		if again, err := ph.Retry(ctx, rec3.ID); err != nil || again.RetriedAt == nil {
			t.Errorf("retry after the scan finished it = %+v, %v", again, err)
		}
		if n := e.versionsOf(t, "p9"); n != before+1 {
			t.Errorf("versions = %d, want %d: the file was staged twice", n, before+1)
		}
	})
}

// TestPending lists the waiting files page by page: the reserved folders,
// files being processed, and failed versions that are not retried are left
// out; a new version under a failed key waits.
func TestPending(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		for _, k := range []string{"inbox/edifact/x.edi", "inbox/mail/INBOX/y.eml", "inbox/registry/r.csv"} {
			e.put(t, k, []byte("x"))
		}
		dir := "inbox/p1/metered-data/"
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			e.put(t, dir+n+".csv", meteredCSV(";", twoDays...))
		}
		e.put(t, "inbox/tso/answer.xml", []byte("<x/>"))
		info := map[string]pipeline.ObjectInfo{}
		objs, _ := e.bucket.List(ctx, "inbox/", "", 100)
		for _, o := range objs {
			info[o.Key] = o
		}
		claimOf := func(name, etag string) pipeline.InboxFile {
			return pipeline.InboxFile{Key: dir + name, ETag: etag, PortfolioID: "p1", Kind: "metered-data", Name: name}
		}
		// b is being processed; c failed in this version; d failed in an earlier one.
		if _, ok, err := e.db.ClaimInboxFile(ctx, claimOf("b.csv", info[dir+"b.csv"].ETag), "X", t0, time.Minute); err != nil || !ok {
			t.Fatal(err)
		}
		for name, etag := range map[string]string{"c.csv": info[dir+"c.csv"].ETag, "d.csv": "earlier"} {
			c, ok, err := e.db.ClaimInboxFile(ctx, claimOf(name, etag), "X", t0, time.Minute)
			if err != nil || !ok {
				t.Fatal(err)
			}
			if err := e.db.FailInboxFile(ctx, c.ID, "X", t0, "gave up", "boom", pipeline.Event{At: t0, Kind: "inbox.failed", Subject: c.Key}); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{dir + "a.csv", dir + "d.csv", dir + "e.csv", "inbox/tso/answer.xml"}
		p := e.processor(t, "A", func(c *inbox.Config) { c.PageSize = 2 })

		var got []string
		after := ""
		for range 10 {
			page, more, err := p.Pending(ctx, "", after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page {
				got = append(got, o.Key)
				if l := info[o.Key]; o.ETag != l.ETag || o.Size != l.Size || !o.Modified.Equal(l.Modified) {
					t.Errorf("pending %s = %+v, listed as %+v", o.Key, o, info[o.Key])
				}
			}
			if !more {
				break
			}
			after = page[len(page)-1].Key
		}
		if !slices.Equal(got, want) {
			t.Errorf("pending in pages of 3 = %v, want %v", got, want)
		}
		page, more, err := p.Pending(ctx, "", dir+"a.csv", 1)
		if err != nil || len(page) != 1 || page[0].Key != dir+"d.csv" || !more {
			t.Errorf("pending after a.csv = %+v, %v, %v", page, more, err)
		}
		page, more, err = p.Pending(ctx, "", "", 4)
		if err != nil || len(page) != 4 || more {
			t.Errorf("pending of exactly all = %d, %v, %v", len(page), more, err)
		}
		// One portfolio's folder: the answer of the TSO folder is not p1's.
		page, more, err = p.Pending(ctx, "p1", "", 10)
		if err != nil || len(page) != 3 || more || page[0].Key != dir+"a.csv" || page[2].Key != dir+"e.csv" {
			t.Errorf("pending of p1 = %+v, %v, %v", page, more, err)
		}
		if _, _, err := p.Pending(ctx, "", "", 0); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("limit 0 = %v", err)
		}

		oldest := func(keys ...string) time.Time {
			var m time.Time
			for _, k := range keys {
				if mod := info[k].Modified; m.IsZero() || mod.Before(m) {
					m = mod
				}
			}
			return m.UTC()
		}
		st, err := p.PendingStats(ctx, 100)
		if err != nil || st.Count != 4 || st.Truncated || st.Oldest == nil || !st.Oldest.Equal(oldest(want...)) {
			t.Errorf("stats = %+v, %v; want 4 since %v", st, err, oldest(want...))
		}
		st, err = p.PendingStats(ctx, 2)
		if err != nil || st.Count != 2 || !st.Truncated || st.Oldest == nil || !st.Oldest.Equal(oldest(want[:2]...)) {
			t.Errorf("capped stats = %+v, %v", st, err)
		}
		if _, err := p.PendingStats(ctx, 0); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("cap 0 = %v", err)
		}
		// An empty inbox has nothing pending and no oldest time.
		empty := newEnv(t, combo{"sqlite+local", "sqlite", false})
		st, err = empty.processor(t, "A").PendingStats(ctx, 10)
		if err != nil || st != (pipeline.PendingInbox{}) {
			t.Errorf("empty stats = %+v, %v", st, err)
		}
	})
}
