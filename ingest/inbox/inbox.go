// Package inbox is the bucket watcher: it finds files that suppliers dropped
// under inbox/<portfolio>/<kind>/<name>, claims each so that only one running
// process works on it, validates it with the API's rules, stages it exactly
// once and moves it to processed/ with a receipt or to rejected/ with its
// errors. The TSOs' answers to the schedules sent arrive the same way, under
// inbox/tso/<name> (see answers.go).
//
// Exactly once rests on three facts. The claim is a database row with a lease,
// so two processes never both work on a file, and a crashed holder's file is
// taken over when its lease runs out. Staging and the row's move to "staged"
// (with the receipt) commit in one transaction that first checks the claim,
// so a file is staged at most once. The moves after that are idempotent and
// are finished from the row on restart, so a crash at any point ends with the
// same result as a run without it.
//
// A file whose attempts end without an outcome for reasons that are not its
// own (a store or the database failing, a bug) is tried again, by this or
// another process, until it has been claimed Config.MaxAttempts times; each
// such attempt records its error on the row and gives the claim up at once.
// When the last attempt fails too, the row is closed as failed with an
// inbox.failed event, and the scans skip that object (same key and etag)
// until an operator retries the record; a new upload under the key is a new
// file. Only a processing row can fail, that is one with nothing staged: a
// staged or rejected file is moved on however often that fails, since a
// failed row's object is taken up again after a retry.
//
// Retry sends a failed or rejected file back. Its next life is a new record,
// claimed by a scan like any new drop, and since neither a failed nor a
// rejected file staged anything, nothing is staged twice. A rejected file is
// moved back from rejected/ under a retry claim of its inbox key, so that no
// scan reads it while the move is half done, and an interrupted retry is
// finished by the next Retry or scan (see retry.go for the order of steps).
package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/bulk"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Key prefixes of the bucket layout.
const (
	InboxPrefix     = "inbox/"
	ProcessedPrefix = "processed/"
	RejectedPrefix  = "rejected/"
	// ReceiptsPrefix holds the newest result of each upload key (see
	// LatestKey).
	ReceiptsPrefix = "receipts/"
	// unknownPortfolio is the rejected/ folder of files whose key names no
	// portfolio.
	unknownPortfolio = "_"
)

// Bucket is what the inbox needs of an object store.
type Bucket interface {
	GetIfMatch(ctx context.Context, key, etag string) (io.ReadCloser, error)
	Stat(ctx context.Context, key string) (pipeline.ObjectInfo, error)
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Move(ctx context.Context, src, dst string) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; a missing key is no error. A retry uses it to
	// finish a move back that copied the object but was interrupted
	// before it removed the source.
	Delete(ctx context.Context, key string) error
}

// Stager stages one file in a single transaction (see sqldb.BulkStage).
type Stager interface {
	Metered(ctx context.Context, entries []pipeline.MeteredEntry) error
	Profiles(ctx context.Context, entries []pipeline.ProfileEntry) error
	Locations(ctx context.Context, locs []pipeline.Location) error
	Forecast(ctx context.Context, f pipeline.Forecast, canonical []byte) error
	// Trades replaces the portfolio's trade set of set.Day with set.
	Trades(ctx context.Context, set pipeline.TradeSet, canonical []byte) error
	ValidateOnly()
	Commit(ctx context.Context, fileID int64, owner, dest string, a *pipeline.AuditEntry,
		receipt func(pipeline.StageResult) ([]byte, error)) (pipeline.StageResult, error)
	Rollback()
}

// Store is what the inbox needs of the database.
type Store interface {
	Portfolio(ctx context.Context, id string) (pipeline.Portfolio, error)
	ClaimInboxFile(ctx context.Context, f pipeline.InboxFile, owner string, now time.Time, lease time.Duration) (pipeline.InboxFile, bool, error)
	RenewInboxLease(ctx context.Context, id int64, owner string, until time.Time) error
	MarkInboxRejected(ctx context.Context, id int64, owner, reason, dest string, result []byte) error
	FinishInboxFile(ctx context.Context, id int64, owner string, now time.Time, ev pipeline.Event) error
	ReleaseInboxFile(ctx context.Context, id int64, owner string) error
	OpenInboxFiles(ctx context.Context) ([]pipeline.InboxFile, error)
	BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (Stager, error)

	// RecordInboxError records an attempt's error on an open file owner
	// holds and ends its lease now; Conflict when the claim was lost.
	RecordInboxError(ctx context.Context, id int64, owner string, now time.Time, lastError string) error
	// FailInboxFile closes a processing file owner holds as failed and
	// records ev with it; Conflict when it is not processing or not owner's.
	FailInboxFile(ctx context.Context, id int64, owner string, now time.Time, reason, lastError string, ev pipeline.Event) error
	// InboxFile returns one record, or a NotFound error.
	InboxFile(ctx context.Context, id int64) (pipeline.InboxFile, error)
	// MarkInboxRetried marks a failed record retried and records ev, once;
	// a record marked already is returned as it is.
	MarkInboxRetried(ctx context.Context, id int64, now time.Time, ev pipeline.Event) (pipeline.InboxFile, error)
	// ClaimInboxRetry takes the claim of a rejected record's inbox key under
	// which its object is moved back, and tells whether an interrupted
	// retry's claim was taken over.
	ClaimInboxRetry(ctx context.Context, id int64, owner string, now time.Time, lease time.Duration) (pipeline.InboxFile, bool, error)
	// FinishInboxRetry deletes the retry claim, marks its record retried and
	// records ev, in one transaction.
	FinishInboxRetry(ctx context.Context, claimID int64, owner string, now time.Time, ev pipeline.Event) (pipeline.InboxFile, error)
	// UnclaimedInboxObjects keeps the objects that no open record and no
	// failed, not retried record of the same version holds, in one query
	// per listing page.
	UnclaimedInboxObjects(ctx context.Context, objs []pipeline.ObjectInfo) ([]pipeline.ObjectInfo, error)
}

// Config tunes a Processor. Zero values take the defaults noted.
type Config struct {
	// Owner names this process in claims; it must differ between processes.
	Owner string
	// Interval between scans (default 30 s); a wake-up starts one early.
	Interval time.Duration
	// Lease of a claim (default 2 min), renewed every third of it while the
	// file is processed. A crashed holder's file is taken over after it.
	Lease time.Duration
	// MaxAttempts is how many times a file is claimed before the processor
	// gives up on it as failed (default 5). Attempts that end in an error
	// count, and so do attempts whose process stopped before an outcome, so
	// that a file that crashes its process is not taken up forever.
	MaxAttempts int
	// MaxFileBytes rejects larger files (default 8 GiB).
	MaxFileBytes int64
	// PageSize of the inbox listing (default 1000).
	PageSize int
	// Decode options: batch size, problem cap, document size.
	Decode bulk.BulkOptions
	// SpoolDir holds temporary copies of Parquet files read from stores
	// without random access (default os.TempDir()).
	SpoolDir string
	Now      func() time.Time
	Logger   *slog.Logger
	// Registerer takes the inbox metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// ParseAnswer and Answers take TSO answers in (inbox/tso/<name>). Without
	// them answer files stay in the inbox and count as failed.
	ParseAnswer AnswerParser
	Answers     AnswerStore
}

// Processor scans the inbox and processes its files.
type Processor struct {
	bucket Bucket
	store  Store
	cfg    Config
	wake   chan struct{}
	m      metrics
	// retries numbers the retries of this process, so that each holds its
	// retry claim under an owner name of its own and two concurrent retries
	// of one file never both move it.
	retries atomic.Int64
}

// New returns a processor over the bucket and the store.
func New(bucket Bucket, store Store, cfg Config) (*Processor, error) {
	if cfg.Owner == "" {
		return nil, pipeline.Errorf(pipeline.Invalid, "inbox: an owner name is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 8 << 30
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 1000
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = os.TempDir()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Processor{bucket: bucket, store: store, cfg: cfg, wake: make(chan struct{}, 1), m: newMetrics()}
	if cfg.Registerer != nil {
		if err := p.m.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Wake starts the next scan now. Bucket notifications call it; they only
// hurry the scan, which alone guarantees that no file is missed.
func (p *Processor) Wake() {
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Run scans until ctx ends: at once, then every Interval or on Wake.
func (p *Processor) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := p.Scan(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Error("inbox scan failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.wake:
		}
	}
}

// Summary counts what one scan did.
type Summary struct {
	Seen      int `json:"seen"`
	Processed int `json:"processed"`
	Rejected  int `json:"rejected"`
	Busy      int `json:"busy"`
	Failed    int `json:"failed"`
	// Skipped counts the files left alone because they failed for good and
	// wait for an operator's retry.
	Skipped int `json:"skipped"`
}

func (s *Summary) add(o outcome) {
	switch o {
	case outcomeProcessed:
		s.Processed++
	case outcomeRejected:
		s.Rejected++
	case outcomeBusy:
		s.Busy++
	case outcomeFailed:
		s.Failed++
	case outcomeSkipped:
		s.Skipped++
	}
}

type outcome int

const (
	outcomeNone outcome = iota
	outcomeProcessed
	outcomeRejected
	outcomeBusy
	outcomeFailed
	outcomeSkipped
)

// Scan finishes files whose processing was interrupted after staging, then
// processes every file in the inbox once. A file that fails for a transient
// reason (store or database unavailable) stays in the inbox for the next scan.
func (p *Processor) Scan(ctx context.Context) (Summary, error) {
	start := time.Now()
	defer func() { p.m.scanSeconds.Observe(time.Since(start).Seconds()) }()
	var sum Summary
	if err := p.sweep(ctx, &sum); err != nil {
		return sum, err
	}
	err := p.eachPage(ctx, InboxPrefix, "", func(objs []pipeline.ObjectInfo) (bool, error) {
		for _, o := range objs {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			sum.Seen++
			out, err := p.handle(ctx, o)
			if err != nil {
				out = outcomeFailed
				p.cfg.Logger.Error("inbox file failed", "key", o.Key, "err", err)
			}
			p.m.files.WithLabelValues(outcomeLabel(out)).Inc()
			sum.add(out)
		}
		return true, nil
	})
	if err != nil && err != ctx.Err() {
		return sum, fmt.Errorf("inbox scan: %w", err)
	} else if err != nil {
		return sum, err // cut short between two files
	}
	p.m.pending.Set(float64(sum.Busy + sum.Failed + sum.Skipped))
	if sum.Seen > 0 {
		p.cfg.Logger.Info("inbox scan", "seen", sum.Seen, "processed", sum.Processed, "rejected", sum.Rejected,
			"busy", sum.Busy, "failed", sum.Failed, "skipped", sum.Skipped, "duration_s", time.Since(start).Seconds())
	}
	return sum, nil
}

// eachPage lists the inbox under prefix after startAfter one page at a time
// and calls fn with each page's objects, until the listing ends or fn returns
// false or an error. A page is cut at the first key in a folder that
// skipFolder names, and the next listing starts after that folder: the
// market communication reads these folders itself, and a folder of 200,000
// EDIFACT files is stepped over in one listing instead of page by page.
func (p *Processor) eachPage(ctx context.Context, prefix, startAfter string, fn func([]pipeline.ObjectInfo) (bool, error)) error {
	after := startAfter
	for {
		page, err := p.bucket.List(ctx, prefix, after, p.cfg.PageSize)
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		objs, skipTo := page, ""
		for i, o := range page {
			if next, ok := skipFolder(o.Key); ok {
				objs, skipTo = page[:i], next
				break
			}
		}
		if more, err := fn(objs); err != nil || !more {
			return err
		}
		switch {
		case skipTo != "":
			after = skipTo
		case len(page) < p.cfg.PageSize:
			return nil
		default:
			after = page[len(page)-1].Key
		}
	}
}

// skipFolder reports whether key lies in a folder under inbox/ that another
// reader owns (pipeline.ReservedInboxFolders other than the TSO answers), and
// returns the listing position after the whole folder: '0' follows '/' in
// byte order, so "inbox/edifact0" sorts after every "inbox/edifact/..." key.
func skipFolder(key string) (string, bool) {
	rel := strings.TrimPrefix(key, InboxPrefix)
	folder, _, ok := strings.Cut(rel, "/")
	if !ok || folder == AnswerFolder || !slices.Contains(pipeline.ReservedInboxFolders, folder) {
		return "", false
	}
	return InboxPrefix + folder + "0", true
}

func outcomeLabel(o outcome) string {
	switch o {
	case outcomeProcessed:
		return "processed"
	case outcomeRejected:
		return "rejected"
	case outcomeBusy:
		return "busy"
	case outcomeFailed:
		return "failed"
	case outcomeSkipped:
		return "skipped"
	}
	return "none"
}

// sweep finishes open files whose object may have left the inbox already: a
// crash after the move but before the row was closed leaves nothing in the
// inbox for the scan to find. It also finishes the retries whose claim
// outlived its lease: the retry was interrupted, and the scans leave its
// key alone until the claim is gone.
func (p *Processor) sweep(ctx context.Context, sum *Summary) error {
	open, err := p.store.OpenInboxFiles(ctx)
	if err != nil {
		return fmt.Errorf("inbox sweep: %w", err)
	}
	now := p.cfg.Now()
	for _, f := range open {
		if f.RetryOf != 0 {
			if !f.LeaseUntil.After(now) {
				p.resumeRetry(ctx, f)
			}
			continue
		}
		if f.State == pipeline.InboxProcessing || (f.LeaseUntil.After(now) && f.Owner != p.cfg.Owner) {
			continue // work the scan of the inbox will find, or another process's live claim
		}
		claim, ok, err := p.store.ClaimInboxFile(ctx, f, p.cfg.Owner, now, p.cfg.Lease)
		if err != nil || !ok {
			continue
		}
		out, err := p.finish(ctx, claim, true)
		if err != nil {
			_, _ = p.attemptFailed(ctx, claim, err)
			p.cfg.Logger.Error("inbox sweep failed", "key", f.Key, "err", err)
			continue
		}
		sum.add(out)
	}
	return nil
}

// layout is where a key sits in inbox/<portfolio>/<kind>/<name>, with the
// kind and the format that its folder and name give, or in inbox/tso/<name>.
type layout struct {
	portfolio, kind, name string // portfolio: the folder, "tso" for an answer
	rest                  string // the key after inbox/<portfolio>/
	bulkKind              bulk.BulkKind
	format                bulk.BulkFormat
	answer                bool // a TSO answer: no portfolio, no bulk kind
}

// portfolioID is the portfolio the file's claim is recorded for: none for
// a TSO answer, whose portfolio only the message it answers tells.
func (l layout) portfolioID() string {
	if l.answer {
		return ""
	}
	return l.portfolio
}

func parseLayout(key string) (layout, error) {
	rel := strings.TrimPrefix(key, InboxPrefix)
	parts := strings.Split(rel, "/")
	l := layout{portfolio: unknownPortfolio, rest: rel}
	if len(parts) >= 2 {
		l.portfolio, l.rest = parts[0], strings.Join(parts[1:], "/")
	}
	if len(parts) == 2 && parts[0] == AnswerFolder && parts[1] != "" {
		l.kind, l.name, l.answer = answerKind, parts[1], true
		return l, nil
	}
	if len(parts) != 3 {
		return l, pipeline.Errorf(pipeline.Invalid,
			"file %q is outside the inbox layout inbox/<portfolio>/<kind>/<name>", key)
	}
	l.kind, l.name = parts[1], parts[2]
	var err error
	if l.bulkKind, err = bulk.ParseBulkKind(l.kind); err != nil {
		return l, err
	}
	l.format, _, err = bulk.DetectFormat(l.bulkKind, l.name)
	return l, err
}

// handle claims and processes one inbox object.
func (p *Processor) handle(ctx context.Context, o pipeline.ObjectInfo) (outcome, error) {
	l, layoutErr := parseLayout(o.Key)
	if l.answer && !p.answersEnabled() {
		// A deployment without the answer parts: the file waits, unclaimed,
		// for one that has them.
		return outcomeFailed, pipeline.Errorf(pipeline.Unavailable, "TSO answer %s: no answer parser and store are configured", o.Key)
	}
	f := pipeline.InboxFile{Key: o.Key, ETag: o.ETag, Size: o.Size, PortfolioID: l.portfolioID(), Kind: l.kind, Name: l.name}
	claim, ok, err := p.store.ClaimInboxFile(ctx, f, p.cfg.Owner, p.cfg.Now(), p.cfg.Lease)
	if err != nil {
		return outcomeFailed, err
	}
	if !ok {
		if claim.State == pipeline.InboxFailed {
			return outcomeSkipped, nil // until an operator retries it
		}
		return outcomeBusy, nil
	}
	if claim.State != pipeline.InboxProcessing {
		// Interrupted after staging or rejecting. If the object is a new
		// drop under the same name, the interrupted one was moved already:
		// close it, then claim the new object.
		out, err := p.finish(ctx, claim, true)
		if err != nil {
			return p.attemptFailed(ctx, claim, err)
		}
		if claim.ETag == o.ETag {
			return out, nil
		}
		return p.handle(ctx, o)
	}
	// The listing may be stale: another process can have finished the file
	// between our listing and our claim.
	if _, err := p.bucket.Stat(ctx, o.Key); pipeline.KindOf(err) == pipeline.NotFound {
		return outcomeNone, p.store.ReleaseInboxFile(ctx, claim.ID, p.cfg.Owner)
	} else if err != nil {
		return p.attemptFailed(ctx, claim, err)
	}
	if claim.Attempts > p.cfg.MaxAttempts {
		// The last attempt ended without an outcome and without recording
		// an error: its process stopped, perhaps because of this file.
		reason := fmt.Sprintf("gave up after %d attempts; the last one ended without an outcome (its process stopped)",
			claim.Attempts-1)
		if claim.LastError != "" {
			reason += "; the last error recorded: " + claim.LastError
		}
		return p.giveUp(ctx, claim, reason, claim.LastError)
	}
	hctx, stop := p.heartbeat(ctx, claim)
	out, err := p.process(hctx, claim, l, layoutErr)
	lost := pipeline.KindOf(context.Cause(hctx)) == pipeline.Conflict
	stop()
	if out == outcomeFailed && err != nil && !lost {
		return p.attemptFailed(ctx, claim, err)
	}
	return out, err
}

// attemptFailed records why an attempt on a claimed file ended without an
// outcome and gives the claim up, so that the next scan tries again; after
// the last attempt it closes a processing file as failed. It returns the
// attempt's error for the scan's log. An attempt cut short by the end of
// ctx (a shutdown) records nothing: the file was not at fault, and its lease
// hands it to the next process.
func (p *Processor) attemptFailed(ctx context.Context, f pipeline.InboxFile, cause error) (outcome, error) {
	if ctx.Err() != nil {
		return outcomeFailed, cause
	}
	msg := errorText(cause)
	if f.State == pipeline.InboxProcessing && f.Attempts >= p.cfg.MaxAttempts {
		out, err := p.giveUp(ctx, f, fmt.Sprintf("gave up after %d attempts: %s", f.Attempts, msg), msg)
		if err == nil {
			return out, cause
		}
		// Staged meanwhile (the move failed after it) or lost: the row
		// stays open, and the error is recorded below if it is still ours.
	}
	if err := p.store.RecordInboxError(ctx, f.ID, f.Owner, p.cfg.Now(), msg); err != nil && pipeline.KindOf(err) != pipeline.Conflict {
		p.cfg.Logger.Warn("inbox: recording an attempt's error failed", "key", f.Key, "err", err)
	}
	return outcomeFailed, cause
}

// giveUp closes a processing file as failed, with an inbox.failed event.
func (p *Processor) giveUp(ctx context.Context, f pipeline.InboxFile, reason, lastError string) (outcome, error) {
	now := p.cfg.Now()
	b, _ := json.Marshal(map[string]any{"id": f.ID, "kind": f.Kind, "name": f.Name, "attempts": f.Attempts,
		"reason": reason})
	ev := pipeline.Event{At: now, Kind: "inbox.failed", PortfolioID: f.PortfolioID, Subject: f.Key, Data: b}
	if err := p.store.FailInboxFile(ctx, f.ID, f.Owner, now, reason, lastError, ev); err != nil {
		return outcomeFailed, err
	}
	p.cfg.Logger.Error("inbox file failed; it stays in the inbox until an operator retries it",
		"key", f.Key, "id", f.ID, "attempts", f.Attempts, "reason", reason)
	return outcomeFailed, nil
}

// heartbeat renews the claim's lease for the claim's owner until stop is
// called, and cancels the returned context when the claim is lost, so a
// processor that was presumed dead stops instead of racing its successor.
func (p *Processor) heartbeat(ctx context.Context, f pipeline.InboxFile) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				err := p.store.RenewInboxLease(ctx, f.ID, f.Owner, p.cfg.Now().Add(p.cfg.Lease))
				if pipeline.KindOf(err) == pipeline.Conflict {
					cancel(err)
					return
				}
				if err != nil {
					// On SQLite a staging transaction holds the write lock; the
					// lease cannot be stolen meanwhile, so a busy renewal is harmless.
					p.cfg.Logger.Debug("inbox lease renewal failed", "key", f.Key, "err", err)
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// rejectReason is a whole-file reason for rejection, with the file's
// problems when it was decoded.
type rejectReason struct {
	reason   string
	problems []ingest.FileProblem
	count    int
}

// process validates and stages a freshly claimed file.
func (p *Processor) process(ctx context.Context, f pipeline.InboxFile, l layout, layoutErr error) (outcome, error) {
	started := p.cfg.Now()
	if layoutErr != nil {
		return p.reject(ctx, f, l, rejectReason{reason: pipeline.MessageOf(layoutErr)})
	}
	if l.answer {
		return p.processAnswer(ctx, f, l)
	}
	kind := l.bulkKind
	if f.Size > p.cfg.MaxFileBytes {
		return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf(
			"file of %d bytes exceeds the inbox limit of %d bytes", f.Size, p.cfg.MaxFileBytes)})
	}
	portfolio, err := p.store.Portfolio(ctx, l.portfolio)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf("unknown portfolio %q", l.portfolio)})
	} else if err != nil {
		return outcomeFailed, err
	}
	opt := p.cfg.Decode
	opt.Rules = ingest.Rules{Active: portfolio.Active()}

	src, err := p.open(ctx, f, l.format)
	if gone(err) {
		return p.release(ctx, f)
	} else if err != nil {
		return outcomeFailed, err
	}
	defer src.Close()

	// One pass reads the file, validates it, computes its input hash and
	// stages its entries as they come, in one transaction that commits only
	// when the whole file is valid: a problem anywhere rolls back what was
	// staged before it, and the file is rejected with every problem found.
	// Reading it twice, once to validate and once to stage, cost a fifth of
	// the time of a large file (issue 20).
	in, err := src.input(l.name)
	if gone(err) {
		return p.release(ctx, f)
	} else if err != nil {
		return outcomeFailed, err
	}
	st, err := p.store.BeginBulk(ctx, stagingKind(kind), l.portfolio, started)
	if err != nil {
		return outcomeFailed, err
	}
	defer st.Rollback()
	var res bulk.BulkResult
	err = stageOverlapped(ctx, st, func(ctx context.Context, emit func(bulk.BulkBatch) error) error {
		var err error
		res, err = bulk.DecodeBulk(ctx, kind, in, opt, func(b bulk.BulkBatch) error {
			// The decoder leaves a trade set's portfolio to the one who
			// knows it: the file's folder names it.
			if b.Trades != nil {
				b.Trades.Portfolio = l.portfolio
			}
			return emit(b)
		})
		return err
	}, func() {
		// Tells an operator watching a large file (and the test that kills
		// a process while it stages one) that its rows are being written.
		p.cfg.Logger.Debug("inbox file staging: first batch written, uncommitted until the whole file is read", "key", f.Key)
	})
	var fe *ingest.FileError
	if errors.As(err, &fe) {
		// The rollback comes first: on SQLite the staging transaction
		// holds the write lock that recording the rejection needs.
		st.Rollback()
		return p.reject(ctx, f, l, rejectReason{
			reason:   fmt.Sprintf("%d problem(s) found; nothing was staged", fe.Count),
			problems: fe.Problems, count: fe.Count,
		})
	} else if err != nil {
		if cause := context.Cause(ctx); cause != nil && pipeline.KindOf(cause) == pipeline.Conflict {
			return outcomeBusy, nil
		}
		return outcomeFailed, fmt.Errorf("stage %s: %w", f.Key, err)
	}
	validated := p.cfg.Now()
	if res.ValidateOnly {
		// A JSON file may ask for validation only anywhere in its
		// document, after entries that were staged already: those go, and
		// the receipt is committed on its own.
		st.Rollback()
		if st, err = p.store.BeginBulk(ctx, stagingKind(kind), l.portfolio, started); err != nil {
			return outcomeFailed, err
		}
		defer st.Rollback()
		st.ValidateOnly()
	}
	dest, err := p.freeKey(ctx, fmt.Sprintf("%s%s/%s/%s", ProcessedPrefix, l.portfolio,
		pipeline.DayOf(validated).String(), l.name), f.ID)
	if err != nil {
		return outcomeFailed, err
	}
	audit := &pipeline.AuditEntry{
		ReceivedAt: started, PortfolioID: l.portfolio, Endpoint: "inbox " + string(kind),
		InputHash: res.InputHash, StatusCode: 200,
	}
	var receipt []byte
	sr, err := st.Commit(ctx, f.ID, p.cfg.Owner, dest, audit, func(sr pipeline.StageResult) ([]byte, error) {
		counts := map[string]int{"entries": res.Entries, "values": int(res.Values),
			"created": sr.Created, "replaced": sr.Replaced, "unchanged": sr.Unchanged}
		audit.Counts = counts
		staged := p.cfg.Now()
		receipt, err = json.MarshalIndent(Receipt{
			ID: f.ID, File: f.Key, Dest: dest, Portfolio: l.portfolio, Kind: string(kind), Format: string(res.Format),
			Size: f.Size, ETag: f.ETag, InputHash: res.InputHash, Status: string(sr.Status), Version: sr.Version,
			Counts: counts, Attempts: f.Attempts,
			Timings: Timings{
				ClaimedAt: f.ClaimedAt, StagedAt: staged,
				ValidateMS: validated.Sub(started).Milliseconds(), StageMS: staged.Sub(validated).Milliseconds(),
				TotalMS: staged.Sub(started).Milliseconds(),
			},
		}, "", "  ")
		return receipt, err
	})
	if pipeline.KindOf(err) == pipeline.Conflict {
		return outcomeBusy, nil // our lease ran out and another process owns the file now
	} else if err != nil {
		return outcomeFailed, err
	}
	p.m.values.Add(float64(res.Values))
	f.State, f.DestKey, f.Result, f.Status, f.InputHash = pipeline.InboxStaged, dest, receipt, sr.Status, res.InputHash
	return p.finish(ctx, f, false)
}

// gone reports whether the claimed version of a file is no longer there to
// read: deleted or moved by another process (NotFound), or replaced by a new
// upload under the same name (Conflict).
func gone(err error) bool {
	k := pipeline.KindOf(err)
	return err != nil && (k == pipeline.NotFound || k == pipeline.Conflict)
}

// release drops the claim of a file whose claimed version is gone before
// anything was staged for it, and wakes the next scan at once: a new upload
// under the name is a file of its own, with a claim of its own.
func (p *Processor) release(ctx context.Context, f pipeline.InboxFile) (outcome, error) {
	if err := p.store.ReleaseInboxFile(ctx, f.ID, p.cfg.Owner); err != nil {
		return outcomeFailed, err
	}
	p.cfg.Logger.Info("inbox file changed or vanished before it was read; claim released", "key", f.Key)
	p.Wake()
	return outcomeNone, nil
}

func stagingKind(k bulk.BulkKind) string {
	switch k {
	case bulk.BulkMetered:
		return "metered"
	case bulk.BulkProfiles:
		return "profile"
	case bulk.BulkMasterData:
		return "location"
	case bulk.BulkTrades:
		return "trades"
	default:
		return "forecast"
	}
}

// preparer is a Stager that can do the part of staging a batch of metered
// or profile days that needs no database (hashing and encoding the values)
// apart from the write (sqldb.BulkStage): it returns the write that remains.
type preparer interface {
	PrepareMetered(entries []pipeline.MeteredEntry) func(context.Context) error
	PrepareProfiles(entries []pipeline.ProfileEntry) func(context.Context) error
}

// pendingBatch is an emitted batch on its way to the staging goroutine:
// either prepared (write set) or as decoded.
type pendingBatch struct {
	b     bulk.BulkBatch
	write func(context.Context) error
}

// stageOverlapped runs decode, which emits batches, and stages each batch on a
// second goroutine, so that decoding the next batch overlaps the database
// write of the previous one. A Stager that is a preparer decides which part
// of the staging, if any, is done on the decoder's goroutine (SQLite's
// engine writes on the staging goroutine, which is the slower side there).
// Batches belong to their receiver once emitted (ingest.BulkBatch), and at
// most two wait between the two sides. A staging failure stops the decoder;
// it is the error returned. firstStaged, when not nil, is called once the
// first batch is written into the still open transaction.
func stageOverlapped(ctx context.Context, st Stager, decode func(context.Context, func(bulk.BulkBatch) error) error, firstStaged func()) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan pendingBatch, 2)
	staged := make(chan error, 1)
	go func() {
		var err error
		for pb := range batches {
			if err != nil {
				continue // drain, so the decoder never blocks
			}
			if pb.write != nil {
				err = pb.write(ctx)
			} else {
				err = stageBatch(ctx, st, pb.b)
			}
			if err != nil {
				cancel(err)
			} else if firstStaged != nil {
				firstStaged()
				firstStaged = nil
			}
		}
		staged <- err
	}()
	prep, _ := st.(preparer)
	err := decode(ctx, func(b bulk.BulkBatch) error {
		// Checked first: once the stager drains, a select would still pick
		// the free channel half of the time.
		if err := context.Cause(ctx); err != nil {
			return err
		}
		pb := pendingBatch{b: b}
		switch {
		case prep != nil && b.Metered != nil:
			pb.write = prep.PrepareMetered(b.Metered)
		case prep != nil && b.Profiles != nil:
			pb.write = prep.PrepareProfiles(b.Profiles)
		}
		select {
		case batches <- pb:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(batches)
	if serr := <-staged; serr != nil {
		return serr
	}
	return err
}

func stageBatch(ctx context.Context, st Stager, b bulk.BulkBatch) error {
	switch {
	case b.Metered != nil:
		return st.Metered(ctx, b.Metered)
	case b.Profiles != nil:
		return st.Profiles(ctx, b.Profiles)
	case b.Locations != nil:
		return st.Locations(ctx, b.Locations)
	case b.Forecast != nil:
		return st.Forecast(ctx, *b.Forecast, b.Canonical)
	case b.Trades != nil:
		return st.Trades(ctx, *b.Trades, b.Canonical)
	}
	return nil
}

// reject records why a claimed file is invalid and moves it to rejected/.
func (p *Processor) reject(ctx context.Context, f pipeline.InboxFile, l layout, why rejectReason) (outcome, error) {
	// A file in the layout goes to rejected/<portfolio>/<name> (a TSO answer
	// to rejected/tso/<name>); one outside it keeps its path below the
	// portfolio, so that nothing collides.
	name := l.name
	if name == "" {
		name = l.rest
	}
	dest, err := p.freeKey(ctx, fmt.Sprintf("%s%s/%s", RejectedPrefix, l.portfolio, name), f.ID)
	if err != nil {
		return outcomeFailed, err
	}
	problems := why.problems
	if problems == nil {
		problems = []ingest.FileProblem{}
	}
	doc, err := json.MarshalIndent(Errors{
		ID: f.ID, File: f.Key, Dest: dest, Portfolio: f.PortfolioID, Kind: l.kind, Reason: why.reason,
		ErrorCount: why.count, Errors: problems, Truncated: why.count > len(why.problems),
		RejectedAt: p.cfg.Now().UTC(),
	}, "", "  ")
	if err != nil {
		return outcomeFailed, err
	}
	if err := p.store.MarkInboxRejected(ctx, f.ID, p.cfg.Owner, why.reason, dest, doc); err != nil {
		if pipeline.KindOf(err) == pipeline.Conflict {
			return outcomeBusy, nil
		}
		return outcomeFailed, err
	}
	f.State, f.DestKey, f.Result, f.Reason = pipeline.InboxRejecting, dest, doc, why.reason
	return p.finish(ctx, f, false)
}

// finish moves a staged or rejected file out of the inbox and closes its
// row. Every step may run again after a crash: the document is written
// before the move, so a file is never in processed/ or rejected/ without
// it, and a missing source means the move happened already. resumed tells
// a finish taken up from an interrupted attempt (see writeLatest).
func (p *Processor) finish(ctx context.Context, f pipeline.InboxFile, resumed bool) (outcome, error) {
	docKey, kind, out := f.DestKey+".receipt.json", "inbox.processed", outcomeProcessed
	if f.State == pipeline.InboxRejecting {
		docKey, kind, out = f.DestKey+".errors.json", "inbox.rejected", outcomeRejected
	}
	if err := p.bucket.Put(ctx, docKey, bytes.NewReader(f.Result), int64(len(f.Result))); err != nil {
		return outcomeFailed, fmt.Errorf("write %s: %w", docKey, err)
	}
	if err := p.writeLatest(ctx, f, docKey, out, resumed); err != nil {
		return outcomeFailed, err
	}
	cur, err := p.bucket.Stat(ctx, f.Key)
	switch {
	case err == nil && cur.ETag == f.ETag:
		if err := p.bucket.Move(ctx, f.Key, f.DestKey); err != nil {
			return outcomeFailed, fmt.Errorf("move %s: %w", f.Key, err)
		}
	case err == nil:
		// Replaced by a new drop after this one was staged: the new object
		// is a file of its own, left in the inbox for its own claim.
	case pipeline.KindOf(err) == pipeline.NotFound:
		// Moved before a crash.
	default:
		return outcomeFailed, err
	}
	data := map[string]any{"id": f.ID, "dest": f.DestKey, "kind": f.Kind, "name": f.Name}
	if out == outcomeProcessed {
		data["status"], data["input_hash"] = f.Status, f.InputHash
	} else {
		data["reason"] = f.Reason
	}
	b, _ := json.Marshal(data)
	ev := pipeline.Event{At: p.cfg.Now(), Kind: kind, PortfolioID: f.PortfolioID, Subject: f.Key, Data: b}
	if out == outcomeProcessed && f.Kind == answerKind {
		// A TSO answer is reported as what it means for the schedule.
		if ev, err = answerEvent(f, p.cfg.Now()); err != nil {
			return outcomeFailed, err
		}
	}
	if err := p.store.FinishInboxFile(ctx, f.ID, p.cfg.Owner, p.cfg.Now(), ev); err != nil {
		if pipeline.KindOf(err) == pipeline.Conflict {
			return outcomeBusy, nil
		}
		return outcomeFailed, err
	}
	p.cfg.Logger.Info("inbox file "+outcomeLabel(out), "key", f.Key, "dest", f.DestKey,
		"status", f.Status, "reason", f.Reason)
	return out, nil
}

// LatestKey is where the newest result of the uploads under an inbox key is
// kept: inbox/<portfolio>/<kind>/<name> gives receipts/<portfolio>/<kind>/<name>.json
// (a TSO answer inbox/tso/<name> gives receipts/tso/<name>.json). A supplier
// who uploads x.csv again finds the result of the newest upload there, from
// the name alone, while the numbered documents in processed/ and rejected/
// keep the history.
func LatestKey(inboxKey string) string {
	return ReceiptsPrefix + strings.TrimPrefix(inboxKey, InboxPrefix) + ".json"
}

// Latest is the document at LatestKey: the newest file's outcome, the key of
// its numbered receipt or errors document, and that document's content.
type Latest struct {
	// Outcome is "processed" (Result is a Receipt, or an AnswerReceipt for
	// a TSO answer) or "rejected" (Result is an Errors document).
	Outcome string `json:"outcome"`
	// ID is the file's record id; a later upload or retry has a higher one.
	ID       int64           `json:"id"`
	File     string          `json:"file"`
	Document string          `json:"document"`
	Result   json.RawMessage `json:"result"`
}

// writeLatest puts the file's result at LatestKey. finish calls it after
// the numbered document is written, so the latest document is never newer
// than the history; a crash before the row is closed writes both again.
//
// A resumed finish does not replace the document of a newer file (a higher
// id), which one whose process stalled past its lease could otherwise do. A
// first finish needs no such read: a key has one open record at most (the
// inbox_files_open index), so no newer file of the key has been claimed
// while this one is open.
func (p *Processor) writeLatest(ctx context.Context, f pipeline.InboxFile, docKey string, out outcome, resumed bool) error {
	key := LatestKey(f.Key)
	if resumed {
		newer, err := p.newerLatest(ctx, key, f.ID)
		if err != nil || newer {
			return err
		}
	}
	doc, err := json.MarshalIndent(Latest{Outcome: outcomeLabel(out), ID: f.ID, File: f.Key, Document: docKey,
		Result: json.RawMessage(f.Result)}, "", "  ")
	if err != nil {
		return err
	}
	if err := p.bucket.Put(ctx, key, bytes.NewReader(doc), int64(len(doc))); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// newerLatest reports whether the document at key belongs to a file with an
// id above id. A document that does not decode counts as older, and is
// replaced.
func (p *Processor) newerLatest(ctx context.Context, key string, id int64) (bool, error) {
	r, err := p.bucket.Get(ctx, key)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	defer r.Close()
	var cur Latest
	derr := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&cur)
	return derr == nil && cur.ID > id, nil
}

// freeKey returns key, or key with the file's id before its extension when
// another file took the name already, so that no earlier file is
// overwritten. The choice is stored with the row, so a re-run after a crash
// uses the same key.
func (p *Processor) freeKey(ctx context.Context, key string, id int64) (string, error) {
	_, err := p.bucket.Stat(ctx, key)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return key, nil
	}
	if err != nil {
		return "", err
	}
	dir, base := path.Split(key)
	name, ext := splitExt(base)
	return fmt.Sprintf("%s%s.%d%s", dir, name, id, ext), nil
}

// splitExt splits "a.csv.gz" into "a" and ".csv.gz".
func splitExt(base string) (string, string) {
	if i := strings.IndexByte(base, '.'); i > 0 {
		return base[:i], base[i:]
	}
	return base, ""
}

// Receipt is the document written next to a processed file.
type Receipt struct {
	ID        int64          `json:"id"`
	File      string         `json:"file"`
	Dest      string         `json:"dest"`
	Portfolio string         `json:"portfolio"`
	Kind      string         `json:"kind"`
	Format    string         `json:"format"`
	Size      int64          `json:"size"`
	ETag      string         `json:"etag"`
	InputHash string         `json:"input_hash"`
	Status    string         `json:"status"`
	Version   int            `json:"version,omitempty"`
	Counts    map[string]int `json:"counts"`
	Attempts  int            `json:"attempts"`
	Timings   Timings        `json:"timings"`
}

// Timings of a processed file. The file is read once, validated and staged
// as it is read, so ValidateMS covers the staging of its entries too, and
// StageMS the commit that ends it.
type Timings struct {
	ClaimedAt time.Time `json:"claimed_at"`
	StagedAt  time.Time `json:"staged_at"`
	// ValidateMS is the time to read, validate and stage the whole file.
	ValidateMS int64 `json:"validate_ms"`
	// StageMS is the time from the end of the file to the commit.
	StageMS int64 `json:"stage_ms"`
	TotalMS int64 `json:"total_ms"`
}

// Errors is the document written next to a rejected file.
type Errors struct {
	ID         int64                `json:"id"`
	File       string               `json:"file"`
	Dest       string               `json:"dest"`
	Portfolio  string               `json:"portfolio"`
	Kind       string               `json:"kind,omitempty"`
	Reason     string               `json:"reason"`
	ErrorCount int                  `json:"error_count"`
	Errors     []ingest.FileProblem `json:"errors"`
	Truncated  bool                 `json:"truncated"`
	RejectedAt time.Time            `json:"rejected_at"`
}
