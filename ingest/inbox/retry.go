package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Retry sends a failed or rejected file back into the inbox and returns its
// record, marked retried (RetriedAt). The file's next life is a new record,
// claimed by the next scan, which Retry wakes.
//
//   - A failed file is still in the inbox: its record is marked, so that
//     the scans take the object again. It is marked even when the object
//     has gone meanwhile, which clears the record from the failed ones.
//   - A rejected file is moved from its rejected/ destination (DestKey)
//     back to its inbox key. Retry refuses with a Conflict error when an
//     object sits at the inbox key already (a new drop is never
//     overwritten) or when the rejected object is gone from the bucket.
//   - A processed file, or one still open, is a Conflict; an unknown id is
//     NotFound.
//
// Retry is idempotent: a record retried already is returned as it is, and
// nothing is moved again. A second Retry while the first still moves the
// object is a Conflict that says so. Nothing is staged twice, since neither
// a failed nor a rejected file staged anything, and the file's next life is
// claimed like any new drop.
//
// The move of a rejected file runs in three steps, each of which may be cut
// short by a crash:
//
//  1. A retry claim of the inbox key is inserted: an open processing row
//     with RetryOf naming the rejected record. The scans leave a key with a
//     retry claim alone, whatever its lease, so no scan reads the object
//     while it is half moved (on S3 a move is a copy and then a delete, and
//     for a moment both keys hold it).
//  2. The object is moved back from DestKey to the inbox key.
//  3. In one transaction the claim is deleted, the record is marked retried
//     and the inbox.retried event is recorded.
//
// Marking the record first and moving afterwards would leave a record that
// says retried over a file still in rejected/ when the move fails or the
// process stops; moving without a claim would let a scan process the file
// while a half-done S3 move still has it in rejected/, and a second Retry
// would then move and process it again. With the claim, an interrupted
// retry is taken over by the next Retry or, once the claim's lease has run
// out, by the sweep of the next scan; the bucket tells how far it got:
// the object still at DestKey and nothing at the inbox key means the move
// is still to do; nothing at DestKey and the object in the inbox means it
// was done; the same object at both keys (same ETag) means an S3 move
// copied and stopped before the delete, which is finished. Anything else at
// the inbox key is a new drop: the retry is dropped, and the rejected file
// stays where it is.
//
// Between the check that the inbox key is free and the move, a supplier can
// still upload to that key: the bucket's Move replaces its destination and
// neither store offers a conditional move. The window is one round trip,
// and the scans' own moves out of the inbox have the same one.
func (p *Processor) Retry(ctx context.Context, id int64) (pipeline.InboxFile, error) {
	f, err := p.store.InboxFile(ctx, id)
	if err != nil {
		return pipeline.InboxFile{}, fmt.Errorf("retry inbox file %d: %w", id, err)
	}
	if f.RetriedAt != nil {
		return f, nil
	}
	switch f.State {
	case pipeline.InboxFailed:
		return p.retryFailed(ctx, f)
	case pipeline.InboxRejected:
		// The move and the mark run to their end even when the caller goes
		// away, so that a closed connection does not leave a retry half
		// done for the next one to finish.
		return p.retryRejected(context.WithoutCancel(ctx), f)
	case pipeline.InboxProcessed:
		return pipeline.InboxFile{}, pipeline.Errorf(pipeline.Conflict,
			"inbox file %d was processed; only failed or rejected files can be retried", id)
	default:
		return pipeline.InboxFile{}, pipeline.Errorf(pipeline.Conflict,
			"inbox file %d is still %s; only failed or rejected files can be retried", id, f.State)
	}
}

// retryEvent is the console event of a retry.
func (p *Processor) retryEvent(f pipeline.InboxFile) pipeline.Event {
	data := map[string]any{"id": f.ID, "state": f.State, "kind": f.Kind, "name": f.Name}
	if f.State == pipeline.InboxRejected {
		data["from"] = f.DestKey
	}
	b, _ := json.Marshal(data)
	return pipeline.Event{At: p.cfg.Now(), Kind: "inbox.retried", PortfolioID: f.PortfolioID, Subject: f.Key, Data: b}
}

func (p *Processor) retryFailed(ctx context.Context, f pipeline.InboxFile) (pipeline.InboxFile, error) {
	rec, err := p.store.MarkInboxRetried(ctx, f.ID, p.cfg.Now(), p.retryEvent(f))
	if err != nil {
		return pipeline.InboxFile{}, fmt.Errorf("retry inbox file %d: %w", f.ID, err)
	}
	p.cfg.Logger.Info("inbox file retried", "key", f.Key, "id", f.ID, "state", f.State)
	p.Wake()
	return rec, nil
}

// retryRejected moves a rejected file back under a retry claim (see Retry).
func (p *Processor) retryRejected(ctx context.Context, f pipeline.InboxFile) (pipeline.InboxFile, error) {
	owner := fmt.Sprintf("%s/retry/%d", p.cfg.Owner, p.retries.Add(1))
	claim, resumed, err := p.store.ClaimInboxRetry(ctx, f.ID, owner, p.cfg.Now(), p.cfg.Lease)
	if pipeline.KindOf(err) == pipeline.Conflict {
		// Another retry may have finished between the read and the claim.
		if cur, rerr := p.store.InboxFile(ctx, f.ID); rerr == nil && cur.RetriedAt != nil {
			return cur, nil
		}
	}
	if err != nil {
		return pipeline.InboxFile{}, fmt.Errorf("retry inbox file %d: %w", f.ID, err)
	}
	hctx, stop := p.heartbeat(ctx, claim)
	rec, err := p.moveBack(hctx, f, claim, resumed)
	stop()
	if err != nil {
		return pipeline.InboxFile{}, fmt.Errorf("retry inbox file %d: %w", f.ID, err)
	}
	p.cfg.Logger.Info("inbox file retried", "key", f.Key, "id", f.ID, "state", f.State, "from", f.DestKey,
		"resumed", resumed)
	p.Wake()
	return rec, nil
}

// moveBack brings the rejected object of f back to its inbox key under
// claim, or finds that an interrupted retry did, and ends the retry.
func (p *Processor) moveBack(ctx context.Context, f, claim pipeline.InboxFile, resumed bool) (pipeline.InboxFile, error) {
	// keep leaves the claim in place for the next Retry or sweep, its lease
	// ended so that either may take it over at once: the move may be half
	// done, and only the claim keeps the scans from reading the object.
	keep := func(err error) (pipeline.InboxFile, error) {
		rerr := p.store.RenewInboxLease(ctx, claim.ID, claim.Owner, p.cfg.Now())
		if rerr != nil && pipeline.KindOf(rerr) != pipeline.Conflict { // Conflict: taken over already
			p.cfg.Logger.Warn("inbox: ending the lease of a retry claim failed", "key", f.Key, "err", rerr)
		}
		return pipeline.InboxFile{}, err
	}
	// drop deletes the claim of a retry that cannot be done; the bucket is
	// as it was before the retry.
	drop := func(err error) (pipeline.InboxFile, error) {
		if rerr := p.store.ReleaseInboxFile(ctx, claim.ID, claim.Owner); rerr != nil {
			p.cfg.Logger.Warn("inbox: releasing a retry claim failed", "key", f.Key, "err", rerr)
		}
		return pipeline.InboxFile{}, err
	}
	src, srcErr := p.bucket.Stat(ctx, f.DestKey)
	if srcErr != nil && pipeline.KindOf(srcErr) != pipeline.NotFound {
		return keep(srcErr)
	}
	cur, curErr := p.bucket.Stat(ctx, f.Key)
	if curErr != nil && pipeline.KindOf(curErr) != pipeline.NotFound {
		return keep(curErr)
	}
	inRejected, inInbox := srcErr == nil, curErr == nil
	switch {
	case inRejected && !inInbox:
		if err := p.bucket.Move(ctx, f.DestKey, f.Key); err != nil {
			return keep(fmt.Errorf("move %s back to %s: %w", f.DestKey, f.Key, err))
		}
	case inRejected && inInbox && resumed && cur.ETag == src.ETag:
		// An S3 move copied the object and stopped before deleting its
		// source; the claim kept the copy from being processed meanwhile.
		if err := p.bucket.Delete(ctx, f.DestKey); err != nil {
			return keep(fmt.Errorf("delete %s after moving it back: %w", f.DestKey, err))
		}
	case inInbox && (inRejected || !resumed):
		return drop(pipeline.Errorf(pipeline.Conflict,
			"inbox file %d: another file sits at its inbox key %s; it is processed as a file of its own, retry when it is gone",
			f.ID, f.Key))
	case inInbox:
		// The interrupted retry moved the object before it could mark the
		// record.
	default:
		return drop(pipeline.Errorf(pipeline.Conflict,
			"inbox file %d: its rejected file %s is no longer in the bucket; there is nothing to retry", f.ID, f.DestKey))
	}
	rec, err := p.store.FinishInboxRetry(ctx, claim.ID, claim.Owner, p.cfg.Now(), p.retryEvent(f))
	if err != nil {
		return keep(err)
	}
	return rec, nil
}

// resumeRetry finishes the retry whose claim the sweep found with its lease
// run out.
func (p *Processor) resumeRetry(ctx context.Context, claim pipeline.InboxFile) {
	f, err := p.store.InboxFile(ctx, claim.RetryOf)
	if err == nil {
		_, err = p.retryRejected(ctx, f)
	}
	if err != nil {
		p.cfg.Logger.Warn("inbox: finishing an interrupted retry failed", "key", claim.Key, "record", claim.RetryOf, "err", err)
	}
}

// Pending lists the files waiting in the inbox for a scan, in key order
// after startAfter, of one portfolio's folder or ("") of the whole inbox:
// the folders that the scan steps over are left out, and
// so are the files with an open record (being processed, or a retry moving
// them back) and those whose version (key and etag) failed and is not
// retried. At most limit files are returned; the bool says that more wait
// after the last. Each listing page costs one database query.
func (p *Processor) Pending(ctx context.Context, portfolio, startAfter string, limit int) ([]pipeline.ObjectInfo, bool, error) {
	if limit <= 0 {
		return nil, false, pipeline.Errorf(pipeline.Invalid, "pending inbox files: limit must be positive, got %d", limit)
	}
	out := make([]pipeline.ObjectInfo, 0, min(limit, p.cfg.PageSize))
	more := false
	prefix := InboxPrefix
	if portfolio != "" {
		prefix += portfolio + "/"
	}
	err := p.eachPending(ctx, prefix, startAfter, func(o pipeline.ObjectInfo) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, o)
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// PendingStats counts the files Pending lists, up to upTo of them, with the
// time since which the oldest of them waits (its Modified time).
func (p *Processor) PendingStats(ctx context.Context, upTo int) (pipeline.PendingInbox, error) {
	if upTo <= 0 {
		return pipeline.PendingInbox{}, pipeline.Errorf(pipeline.Invalid, "pending inbox files: cap must be positive, got %d", upTo)
	}
	var st pipeline.PendingInbox
	err := p.eachPending(ctx, InboxPrefix, "", func(o pipeline.ObjectInfo) bool {
		if st.Count == upTo {
			st.Truncated = true
			return false
		}
		st.Count++
		if st.Oldest == nil || o.Modified.Before(*st.Oldest) {
			m := o.Modified.UTC()
			st.Oldest = &m
		}
		return true
	})
	if err != nil {
		return pipeline.PendingInbox{}, err
	}
	return st, nil
}

// eachPending calls fn with each waiting file under prefix after startAfter
// until fn returns false or the listing ends, listing and looking up one
// page at a time, as the scan does.
func (p *Processor) eachPending(ctx context.Context, prefix, startAfter string, fn func(pipeline.ObjectInfo) bool) error {
	err := p.eachPage(ctx, prefix, startAfter, func(objs []pipeline.ObjectInfo) (bool, error) {
		waiting, err := p.store.UnclaimedInboxObjects(ctx, objs)
		if err != nil {
			return false, err
		}
		for _, o := range waiting {
			if !fn(o) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("pending inbox files: %w", err)
	}
	return nil
}

// maxErrorText bounds the error recorded on a row: enough for the cause
// and its context, not a driver's dump.
const maxErrorText = 1000

var (
	// urlCredentials matches the user information of a URL
	// (scheme://user:password@).
	urlCredentials = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@"']*@`)
	// secretValue matches key=value pairs that carry secrets: passwords
	// of connection strings, S3 signatures and credentials of presigned
	// URLs, tokens.
	secretValue = regexp.MustCompile(`(?i)((?:password|passwd|pwd|sslpassword|secret|secret_?key|access_?key|token|` +
		`x-amz-signature|x-amz-credential|x-amz-security-token|signature)=)[^&\s"']+`)
)

// errorText is an attempt's error as recorded for operators: credentials in
// URLs and secret values of key=value pairs are masked, and the text is cut
// at maxErrorText bytes.
func errorText(err error) string {
	s := urlCredentials.ReplaceAllString(err.Error(), "${1}***@")
	s = secretValue.ReplaceAllString(s, "${1}***")
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
