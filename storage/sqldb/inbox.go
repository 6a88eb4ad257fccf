package sqldb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type inboxRow struct {
	bun.BaseModel `bun:"table:inbox_files"`

	ID          int64      `bun:"id,pk,autoincrement"`
	ObjectKey   string     `bun:"object_key"`
	ETag        string     `bun:"etag"`
	Size        int64      `bun:"size"`
	PortfolioID string     `bun:"portfolio_id"`
	Kind        string     `bun:"kind"`
	Name        string     `bun:"name"`
	State       string     `bun:"state"`
	Owner       string     `bun:"owner"`
	LeaseUntil  time.Time  `bun:"lease_until"`
	Attempts    int        `bun:"attempts"`
	InputHash   string     `bun:"input_hash"`
	Status      string     `bun:"status"`
	Reason      string     `bun:"reason"`
	DestKey     string     `bun:"dest_key"`
	Result      string     `bun:"result"`
	ClaimedAt   time.Time  `bun:"claimed_at"`
	FinishedAt  *time.Time `bun:"finished_at"`
	RetriedAt   *time.Time `bun:"retried_at"`
	LastError   string     `bun:"last_error"`
	RetryOf     *int64     `bun:"retry_of"`
}

func (r inboxRow) domain() pipeline.InboxFile {
	f := pipeline.InboxFile{
		ID: r.ID, Key: r.ObjectKey, ETag: r.ETag, Size: r.Size, PortfolioID: r.PortfolioID, Kind: r.Kind,
		Name: r.Name, State: pipeline.InboxState(r.State), Owner: r.Owner, LeaseUntil: r.LeaseUntil.UTC(),
		Attempts: r.Attempts, InputHash: r.InputHash, Status: pipeline.Status(r.Status), Reason: r.Reason,
		DestKey: r.DestKey, ClaimedAt: r.ClaimedAt.UTC(),
	}
	if r.Result != "" {
		f.Result = json.RawMessage(r.Result)
	}
	if r.FinishedAt != nil {
		t := r.FinishedAt.UTC()
		f.FinishedAt = &t
	}
	if r.RetriedAt != nil {
		t := r.RetriedAt.UTC()
		f.RetriedAt = &t
	}
	f.LastError = r.LastError
	if r.RetryOf != nil {
		f.RetryOf = *r.RetryOf
	}
	return f
}

const openStates = "state IN ('processing', 'staged', 'rejecting')"

// failedNotRetried selects the failed records that keep the scans off their
// object until an operator retries them.
const failedNotRetried = "state = 'failed' AND retried_at IS NULL"

// ClaimInboxFile makes owner the processor of the object described by f
// (Key, ETag, Size, PortfolioID, Kind, Name). It returns the open row and
// true when owner may work on it: a new claim, a take-over of a claim whose
// lease ran out (its holder crashed), or the resumption of a file that was
// staged or rejected but not moved. It returns false while another owner's
// lease is live, while a retry claim holds the key (whatever its lease: only
// ClaimInboxRetry takes one over, because only the bucket tells whether its
// move happened), and when a failed record of the same object (key and
// etag) is not retried; the row returned then is that failed record. The
// caller tells from the row's state and etag what is left to do.
func (db *DB) ClaimInboxFile(ctx context.Context, f pipeline.InboxFile, owner string, now time.Time,
	lease time.Duration) (pipeline.InboxFile, bool, error) {
	now = now.UTC()
	var out pipeline.InboxFile
	claimed := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var rows []inboxRow
		q := tx.NewSelect().Model(&rows).Where("object_key = ?", f.Key).Where(openStates)
		if db.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		if len(rows) == 0 {
			// Checked in the claim's transaction, so that a file another
			// process gives up on between this process's listing and its
			// claim is not taken up again.
			var failed []inboxRow
			if err := tx.NewSelect().Model(&failed).Where("object_key = ?", f.Key).Where("etag = ?", f.ETag).
				Where(failedNotRetried).Order("id DESC").Limit(1).Scan(ctx); err != nil {
				return fmt.Errorf("look for a failed record: %w", err)
			}
			if len(failed) > 0 {
				out = failed[0].domain()
				return nil
			}
			row := inboxRow{
				ObjectKey: f.Key, ETag: f.ETag, Size: f.Size, PortfolioID: f.PortfolioID, Kind: f.Kind, Name: f.Name,
				State: string(pipeline.InboxProcessing), Owner: owner, LeaseUntil: now.Add(lease), Attempts: 1,
				ClaimedAt: now,
			}
			res, err := tx.NewInsert().Model(&row).
				On("CONFLICT (object_key) WHERE " + openStates + " DO NOTHING").Returning("id").Exec(ctx)
			if err != nil {
				return fmt.Errorf("insert claim: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return nil // another process claimed it between our read and write
			}
			out, claimed = row.domain(), true
			return nil
		}
		row := rows[0]
		if row.RetryOf != nil || (row.Owner != owner && row.LeaseUntil.After(now)) {
			out = row.domain()
			return nil
		}
		upd := tx.NewUpdate().Model((*inboxRow)(nil)).Where("id = ?", row.ID).
			Set("owner = ?", owner).Set("lease_until = ?", now.Add(lease)).Set("attempts = attempts + 1")
		row.Owner, row.LeaseUntil, row.Attempts = owner, now.Add(lease), row.Attempts+1
		if row.State == string(pipeline.InboxProcessing) {
			// A crashed claim starts over, on whatever the object is now.
			upd = upd.Set("etag = ?", f.ETag).Set("size = ?", f.Size).Set("claimed_at = ?", now)
			row.ETag, row.Size, row.ClaimedAt = f.ETag, f.Size, now
		}
		if _, err := upd.Exec(ctx); err != nil {
			return fmt.Errorf("take over claim: %w", err)
		}
		out, claimed = row.domain(), true
		return nil
	})
	if err != nil {
		return pipeline.InboxFile{}, false, fmt.Errorf("claim inbox file %s: %w", f.Key, err)
	}
	return out, claimed, nil
}

// errLostClaim tells a processor that another owner has taken its file over.
func errLostClaim(id int64) error {
	return pipeline.Errorf(pipeline.Conflict, "inbox file %d: claim lost to another owner", id)
}

// RenewInboxLease extends owner's lease on an open file. A Conflict error
// means the claim was lost and the owner must stop.
func (db *DB) RenewInboxLease(ctx context.Context, id int64, owner string, until time.Time) error {
	res, err := db.bun.NewUpdate().Model((*inboxRow)(nil)).Set("lease_until = ?", until.UTC()).
		Where("id = ?", id).Where("owner = ?", owner).Where(openStates).Exec(ctx)
	if err != nil {
		return fmt.Errorf("renew inbox lease %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostClaim(id)
	}
	return nil
}

// MarkInboxRejected records that a claimed file is invalid: reason, where it
// will be moved and the errors document. Nothing was staged.
func (db *DB) MarkInboxRejected(ctx context.Context, id int64, owner, reason, dest string, result []byte) error {
	res, err := db.bun.NewUpdate().Model((*inboxRow)(nil)).
		Set("state = ?", string(pipeline.InboxRejecting)).Set("reason = ?", reason).Set("dest_key = ?", dest).
		Set("result = ?", string(result)).
		Where("id = ?", id).Where("owner = ?", owner).Where("state = ?", string(pipeline.InboxProcessing)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark inbox file %d rejected: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostClaim(id)
	}
	return nil
}

// FinishInboxFile closes an open file once it has been moved out of the
// inbox, and records the console event of its outcome in the same
// transaction.
func (db *DB) FinishInboxFile(ctx context.Context, id int64, owner string, now time.Time, ev pipeline.Event) error {
	return db.inTx(ctx, func(tx bun.Tx) error {
		var row inboxRow
		if err := tx.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
			return fmt.Errorf("finish inbox file %d: %w", id, err)
		}
		var final pipeline.InboxState
		switch pipeline.InboxState(row.State) {
		case pipeline.InboxStaged:
			final = pipeline.InboxProcessed
		case pipeline.InboxRejecting:
			final = pipeline.InboxRejected
		default:
			return pipeline.Errorf(pipeline.Conflict, "inbox file %d is %s, not ready to finish", id, row.State)
		}
		res, err := tx.NewUpdate().Model((*inboxRow)(nil)).Set("state = ?", string(final)).
			Set("finished_at = ?", now.UTC()).Where("id = ?", id).Where("owner = ?", owner).
			Where("state = ?", row.State).Exec(ctx)
		if err != nil {
			return fmt.Errorf("finish inbox file %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errLostClaim(id)
		}
		return insertEvent(ctx, tx, ev)
	})
}

// InboxFiles lists file records, newest claim first: of a portfolio, in the
// given states, below q.BeforeID for keyset paging, and without the failed
// and rejected records retried already when q.NotRetried is set.
func (db *DB) InboxFiles(ctx context.Context, q pipeline.InboxQuery) ([]pipeline.InboxFile, error) {
	var rows []inboxRow
	sel := db.bun.NewSelect().Model(&rows).Order("id DESC").Limit(int64(max(q.Limit, 1)))
	if q.Portfolio != "" {
		sel = sel.Where("portfolio_id = ?", q.Portfolio)
	}
	if q.BeforeID > 0 {
		sel = sel.Where("id < ?", q.BeforeID)
	}
	if q.NotRetried {
		sel = sel.Where("retried_at IS NULL")
	}
	if len(q.States) > 0 {
		states := make([]string, len(q.States))
		for i, s := range q.States {
			states[i] = string(s)
		}
		sel = sel.Where("state IN (?)", bun.In(states))
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list inbox files: %w", err)
	}
	out := make([]pipeline.InboxFile, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

type eventRow struct {
	bun.BaseModel `bun:"table:events"`

	ID          int64     `bun:"id,pk,autoincrement"`
	At          time.Time `bun:"at"`
	Kind        string    `bun:"kind"`
	PortfolioID string    `bun:"portfolio_id"`
	Subject     string    `bun:"subject"`
	DeliveryDay *string   `bun:"delivery_day"`
	Data        string    `bun:"data"`
}

func insertEvent(ctx context.Context, conn bun.IDB, ev pipeline.Event) error {
	data := string(ev.Data)
	if data == "" {
		data = "{}"
	}
	row := eventRow{At: ev.At.UTC(), Kind: ev.Kind, PortfolioID: ev.PortfolioID, Subject: ev.Subject, Data: data}
	if ev.DeliveryDay != nil {
		row.DeliveryDay = nullable(ev.DeliveryDay.String())
	}
	if _, err := conn.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("insert event %s: %w", ev.Kind, err)
	}
	return nil
}

// RecordEvent appends an event to the console feed.
func (db *DB) RecordEvent(ctx context.Context, ev pipeline.Event) error {
	return insertEvent(ctx, db.bun, ev)
}

// LastEventID is the id of the newest event, 0 when there is none: where a
// console page's live stream starts. It reads the primary key's end only.
func (db *DB) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	if err := db.bun.NewSelect().Model((*eventRow)(nil)).ColumnExpr("COALESCE(MAX(id), 0)").Scan(ctx, &id); err != nil {
		return 0, fmt.Errorf("last event id: %w", err)
	}
	return id, nil
}

// Events returns events in id order (oldest first) after q.AfterID, so a
// console can poll with the last id it saw, filtered by kind, portfolio,
// time range [From, To) and delivery day.
func (db *DB) Events(ctx context.Context, q pipeline.EventQuery) ([]pipeline.Event, error) {
	var rows []eventRow
	if err := db.eventsQuery(q, &rows).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]pipeline.Event, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// eventsQuery is the query of Events; the tests explain it.
func (db *DB) eventsQuery(q pipeline.EventQuery, rows *[]eventRow) *bun.SelectQuery {
	sel := db.bun.NewSelect().Model(rows).Where("id > ?", q.AfterID).Order("id").Limit(int64(max(q.Limit, 1)))
	if q.Kind != "" {
		if prefix, ok := strings.CutSuffix(q.Kind, "*"); ok {
			sel = sel.Where("substr(kind, 1, ?) = ?", len(prefix), prefix)
		} else {
			sel = sel.Where("kind = ?", q.Kind)
		}
	}
	if q.Portfolio != "" {
		sel = sel.Where("portfolio_id = ?", q.Portfolio)
	}
	if !q.From.IsZero() {
		sel = sel.Where("at >= ?", q.From.UTC())
	}
	if !q.To.IsZero() {
		sel = sel.Where("at < ?", q.To.UTC())
	}
	if q.Day != nil {
		sel = sel.Where("delivery_day = ?", q.Day.String())
	}
	return sel
}

// OpenInboxFiles lists the files whose processing has not finished.
func (db *DB) OpenInboxFiles(ctx context.Context) ([]pipeline.InboxFile, error) {
	var rows []inboxRow
	if err := db.bun.NewSelect().Model(&rows).Where(openStates).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list open inbox files: %w", err)
	}
	out := make([]pipeline.InboxFile, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// ReleaseInboxFile drops owner's fresh claim of a file whose claimed version
// is gone before it was staged: another process finished it between this
// process's listing and its claim, or a new upload replaced it. Nothing was
// staged for the claim.
func (db *DB) ReleaseInboxFile(ctx context.Context, id int64, owner string) error {
	_, err := db.bun.NewDelete().Model((*inboxRow)(nil)).Where("id = ?", id).Where("owner = ?", owner).
		Where("state = ?", string(pipeline.InboxProcessing)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release inbox file %d: %w", id, err)
	}
	return nil
}
