package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// This file holds the inbox records' failed state, the operators' retries
// and the figures of the console. The processor (ingest/inbox) decides what
// to do; these methods make each step one transaction that checks the claim
// it relies on, as the rest of the inbox's methods do.

// InboxFile returns the record with the id, or a NotFound error.
func (db *DB) InboxFile(ctx context.Context, id int64) (pipeline.InboxFile, error) {
	what := fmt.Sprintf("inbox file %d", id)
	return getOne[inboxRow](ctx, db, what, "id", id, what+" not found")
}

// RecordInboxError records the error of an attempt on an open file that
// owner holds, and gives the claim up at once (its lease ends now), so that
// the next scan of any process takes the file over instead of waiting for
// the lease. A Conflict error means the claim was lost already.
func (db *DB) RecordInboxError(ctx context.Context, id int64, owner string, now time.Time, lastError string) error {
	res, err := db.bun.NewUpdate().Model((*inboxRow)(nil)).Set("last_error = ?", lastError).
		Set("lease_until = ?", now.UTC()).
		Where("id = ?", id).Where("owner = ?", owner).Where(openStates).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record the error of inbox file %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostClaim(id)
	}
	return nil
}

// FailInboxFile closes a processing file that owner holds as failed, with
// the reason shown to operators and the last attempt's error, and records
// the console event ev in the same transaction. Only a processing file can
// fail: one that was staged or rejected must still be moved, however long
// that takes, or it would be staged again after a retry. A Conflict error
// means the file is not processing or not owner's.
func (db *DB) FailInboxFile(ctx context.Context, id int64, owner string, now time.Time, reason, lastError string,
	ev pipeline.Event) error {
	return db.inTx(ctx, func(tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*inboxRow)(nil)).Set("state = ?", string(pipeline.InboxFailed)).
			Set("reason = ?", reason).Set("last_error = ?", lastError).Set("finished_at = ?", now.UTC()).
			Set("lease_until = ?", now.UTC()).
			Where("id = ?", id).Where("owner = ?", owner).Where("state = ?", string(pipeline.InboxProcessing)).
			Where("retry_of IS NULL").Exec(ctx)
		if err != nil {
			return fmt.Errorf("mark inbox file %d failed: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return pipeline.Errorf(pipeline.Conflict, "inbox file %d: not processing under owner %s, cannot fail it", id, owner)
		}
		return insertEvent(ctx, tx, ev)
	})
}

// lockedInboxRow reads the record with the id in tx, locked against
// concurrent writers on PostgreSQL (SQLite's transactions hold the write lock
// from their start).
func (db *DB) lockedInboxRow(ctx context.Context, tx bun.Tx, id int64) (inboxRow, error) {
	var row inboxRow
	q := tx.NewSelect().Model(&row).Where("id = ?", id)
	if db.dialect == Postgres {
		q = q.For("UPDATE")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row, pipeline.Errorf(pipeline.NotFound, "inbox file %d not found", id)
	}
	if err != nil {
		return row, fmt.Errorf("inbox file %d: %w", id, err)
	}
	return row, nil
}

// markRetried marks the locked record row retried at now and records ev, in
// tx, unless it is marked already: a retry is marked, and announced, once.
func markRetried(ctx context.Context, tx bun.Tx, row *inboxRow, now time.Time, ev pipeline.Event) error {
	if row.RetriedAt != nil {
		return nil
	}
	at := now.UTC()
	if _, err := tx.NewUpdate().Model((*inboxRow)(nil)).Set("retried_at = ?", at).
		Where("id = ?", row.ID).Exec(ctx); err != nil {
		return fmt.Errorf("mark inbox file %d retried: %w", row.ID, err)
	}
	row.RetriedAt = &at
	return insertEvent(ctx, tx, ev)
}

// MarkInboxRetried marks a failed record as sent back into the inbox and
// records ev in the same transaction, so that the scans take its object
// again as a new life. It is idempotent: a record marked already is
// returned as it is, without a second event. A record that is not failed is
// a Conflict (a rejected file is retried with ClaimInboxRetry and
// FinishInboxRetry, because its object must be moved back first).
func (db *DB) MarkInboxRetried(ctx context.Context, id int64, now time.Time, ev pipeline.Event) (pipeline.InboxFile, error) {
	var out pipeline.InboxFile
	err := db.inTx(ctx, func(tx bun.Tx) error {
		row, err := db.lockedInboxRow(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.State != string(pipeline.InboxFailed) {
			return pipeline.Errorf(pipeline.Conflict, "inbox file %d is %s, not failed", id, row.State)
		}
		if err := markRetried(ctx, tx, &row, now, ev); err != nil {
			return err
		}
		out = row.domain()
		return nil
	})
	return out, err
}

// ClaimInboxRetry takes the retry claim of a rejected record that is not
// retried: an open row on the record's inbox key, with RetryOf set to id and
// leased to owner, under which the caller moves the rejected object back.
// While it exists the scans leave the key alone, so the object cannot be
// processed while a move is half done (on S3 a move is a copy and a delete).
// The second result is true when an earlier retry's claim was taken over
// (its lease ran out, or it is owner's): that retry may have moved the
// object already, and the caller finds out from the bucket.
//
// The error is NotFound for an unknown id and Conflict when the record is
// not rejected, is retried already, or the key is held: by a retry of the
// record under a live lease, by the retry of another record of the key, or
// by a new file under the key being processed.
func (db *DB) ClaimInboxRetry(ctx context.Context, id int64, owner string, now time.Time,
	lease time.Duration) (pipeline.InboxFile, bool, error) {
	now = now.UTC()
	var out pipeline.InboxFile
	resumed := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		rec, err := db.lockedInboxRow(ctx, tx, id)
		if err != nil {
			return err
		}
		switch {
		case rec.State != string(pipeline.InboxRejected):
			return pipeline.Errorf(pipeline.Conflict, "inbox file %d is %s, not rejected", id, rec.State)
		case rec.RetriedAt != nil:
			return pipeline.Errorf(pipeline.Conflict, "inbox file %d is retried already", id)
		}
		var open []inboxRow
		q := tx.NewSelect().Model(&open).Where("object_key = ?", rec.ObjectKey).Where(openStates)
		if db.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("look for a claim of %s: %w", rec.ObjectKey, err)
		}
		if len(open) > 0 {
			c := open[0]
			switch {
			case c.RetryOf == nil:
				return pipeline.Errorf(pipeline.Conflict,
					"inbox file %d: another file under its key %s is being processed; retry when it is done", id, rec.ObjectKey)
			case *c.RetryOf != id:
				return pipeline.Errorf(pipeline.Conflict,
					"inbox file %d: its key %s is held by the retry of inbox file %d", id, rec.ObjectKey, *c.RetryOf)
			case c.Owner != owner && c.LeaseUntil.After(now):
				return pipeline.Errorf(pipeline.Conflict, "inbox file %d: a retry of it is under way", id)
			}
			if _, err := tx.NewUpdate().Model((*inboxRow)(nil)).Set("owner = ?", owner).
				Set("lease_until = ?", now.Add(lease)).Set("attempts = attempts + 1").
				Where("id = ?", c.ID).Exec(ctx); err != nil {
				return fmt.Errorf("take over the retry of inbox file %d: %w", id, err)
			}
			c.Owner, c.LeaseUntil, c.Attempts = owner, now.Add(lease), c.Attempts+1
			out, resumed = c.domain(), true
			return nil
		}
		row := inboxRow{
			ObjectKey: rec.ObjectKey, ETag: rec.ETag, Size: rec.Size, PortfolioID: rec.PortfolioID, Kind: rec.Kind,
			Name: rec.Name, State: string(pipeline.InboxProcessing), Owner: owner, LeaseUntil: now.Add(lease),
			Attempts: 1, ClaimedAt: now, RetryOf: &id,
		}
		res, err := tx.NewInsert().Model(&row).
			On("CONFLICT (object_key) WHERE " + openStates + " DO NOTHING").Returning("id").Exec(ctx)
		if err != nil {
			return fmt.Errorf("insert the retry claim of inbox file %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return pipeline.Errorf(pipeline.Conflict,
				"inbox file %d: another file under its key %s is being processed; retry when it is done", id, rec.ObjectKey)
		}
		out = row.domain()
		return nil
	})
	if err != nil {
		return pipeline.InboxFile{}, false, fmt.Errorf("claim the retry of inbox file %d: %w", id, err)
	}
	return out, resumed, nil
}

// FinishInboxRetry ends the retry whose claim owner holds, once the
// rejected object is back in the inbox: it deletes the claim, marks the
// rejected record retried and records ev, in one transaction, and returns
// the record. A Conflict error means the claim was lost.
func (db *DB) FinishInboxRetry(ctx context.Context, claimID int64, owner string, now time.Time,
	ev pipeline.Event) (pipeline.InboxFile, error) {
	var out pipeline.InboxFile
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var claims []inboxRow
		q := tx.NewSelect().Model(&claims).Where("id = ?", claimID).Where("owner = ?", owner).
			Where("state = ?", string(pipeline.InboxProcessing)).Where("retry_of IS NOT NULL")
		if db.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return fmt.Errorf("read the retry claim %d: %w", claimID, err)
		}
		if len(claims) == 0 {
			return errLostClaim(claimID)
		}
		if _, err := tx.NewDelete().Model((*inboxRow)(nil)).Where("id = ?", claimID).Exec(ctx); err != nil {
			return fmt.Errorf("delete the retry claim %d: %w", claimID, err)
		}
		id := *claims[0].RetryOf
		rec, err := db.lockedInboxRow(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := markRetried(ctx, tx, &rec, now, ev); err != nil {
			return err
		}
		out = rec.domain()
		return nil
	})
	return out, err
}

// pendingChunk bounds the keys of one lookup of UnclaimedInboxObjects, far
// below the bind-parameter limits of both backends; a listing page of the
// default size is one query.
const pendingChunk = 1000

// UnclaimedInboxObjects returns, in their order, the objects of objs that
// wait for a scan: no open record holds their key, and no failed record of
// the same version (key and etag) that is not retried keeps the scans off
// them. It reads the records of a listing page in one query.
func (db *DB) UnclaimedInboxObjects(ctx context.Context, objs []pipeline.ObjectInfo) ([]pipeline.ObjectInfo, error) {
	type held struct {
		ObjectKey string `bun:"object_key"`
		ETag      string `bun:"etag"`
		State     string `bun:"state"`
	}
	openKeys := map[string]bool{}
	failed := map[[2]string]bool{}
	for start := 0; start < len(objs); start += pendingChunk {
		chunk := objs[start:min(start+pendingChunk, len(objs))]
		keys := make([]string, len(chunk))
		for i, o := range chunk {
			keys[i] = o.Key
		}
		// Two selects, so that each uses its partial index (the open
		// records' unique one, the failed records' one).
		var rows []held
		err := db.bun.NewRaw("SELECT object_key, etag, state FROM inbox_files WHERE object_key IN (?) AND "+openStates+
			" UNION ALL SELECT object_key, etag, state FROM inbox_files WHERE object_key IN (?) AND "+failedNotRetried,
			bun.In(keys), bun.In(keys)).Scan(ctx, &rows)
		if err != nil {
			return nil, fmt.Errorf("look up the inbox records of %d objects: %w", len(keys), err)
		}
		for _, r := range rows {
			if r.State == string(pipeline.InboxFailed) {
				failed[[2]string{r.ObjectKey, r.ETag}] = true
			} else {
				openKeys[r.ObjectKey] = true
			}
		}
	}
	out := make([]pipeline.ObjectInfo, 0, len(objs))
	for _, o := range objs {
		if !openKeys[o.Key] && !failed[[2]string{o.Key, o.ETag}] {
			out = append(out, o)
		}
	}
	return out, nil
}

// InboxCounts returns the open records (Processing), the failed records
// that are not retried and the rejected records, both finished at or after
// since. Each figure is read through its index, in one round trip.
func (db *DB) InboxCounts(ctx context.Context, since time.Time) (pipeline.InboxCounts, error) {
	var c struct {
		Processing int `bun:"processing"`
		Failed     int `bun:"failed"`
		Rejected   int `bun:"rejected"`
	}
	since = since.UTC()
	err := db.bun.NewRaw("SELECT "+
		"(SELECT COUNT(*) FROM inbox_files WHERE "+openStates+") AS processing, "+
		"(SELECT COUNT(*) FROM inbox_files WHERE "+failedNotRetried+" AND finished_at >= ?) AS failed, "+
		"(SELECT COUNT(*) FROM inbox_files WHERE state = 'rejected' AND finished_at >= ?) AS rejected",
		since, since).Scan(ctx, &c)
	if err != nil {
		return pipeline.InboxCounts{}, fmt.Errorf("count inbox files: %w", err)
	}
	return pipeline.InboxCounts{Processing: c.Processing, Failed: c.Failed, Rejected: c.Rejected}, nil
}
