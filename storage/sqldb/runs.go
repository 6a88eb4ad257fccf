package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type runRow struct {
	bun.BaseModel `bun:"table:runs"`

	ID          int64      `bun:"id,pk,autoincrement"`
	ParentID    *int64     `bun:"parent_id"`
	Stage       string     `bun:"stage"`
	DeliveryDay string     `bun:"delivery_day"`
	Status      string     `bun:"status"`
	TriggeredBy string     `bun:"triggered_by"`
	Attempt     int        `bun:"attempt"`
	StartedAt   time.Time  `bun:"started_at"`
	FinishedAt  *time.Time `bun:"finished_at"`
	Error       string     `bun:"error"`
	Outputs     *string    `bun:"outputs"`
}

func (r runRow) domain() (pipeline.Run, error) {
	day, err := pipeline.ParseDay(r.DeliveryDay)
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("run %d: stored %w", r.ID, err)
	}
	out := pipeline.Run{
		ID: r.ID, ParentID: r.ParentID, Stage: pipeline.Stage(r.Stage), Day: day, Status: pipeline.RunStatus(r.Status),
		Trigger: r.TriggeredBy, Attempt: r.Attempt, StartedAt: r.StartedAt.UTC(), Error: r.Error,
	}
	if r.FinishedAt != nil {
		t := r.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	if r.Outputs != nil {
		out.Outputs = json.RawMessage(*r.Outputs)
	}
	return out, nil
}

// CreateRun records the start of a run and returns it with its ID. The
// record always starts as running, whatever r.Status says: only FinishRun
// and FailStaleRuns end a run.
func (db *DB) CreateRun(ctx context.Context, r pipeline.Run) (pipeline.Run, error) {
	switch {
	case r.Stage != pipeline.StageChain && !validStage(r.Stage):
		return pipeline.Run{}, pipeline.Errorf(pipeline.Invalid, "run: unknown stage %q", r.Stage)
	case r.Day.IsZero():
		return pipeline.Run{}, pipeline.Errorf(pipeline.Invalid, "run of %s: delivery day is required", r.Stage)
	case r.StartedAt.IsZero():
		return pipeline.Run{}, pipeline.Errorf(pipeline.Invalid, "run of %s: start time is required", r.Stage)
	}
	if r.Attempt <= 0 {
		r.Attempt = 1
	}
	r.Status, r.FinishedAt, r.Error, r.Outputs = pipeline.RunRunning, nil, "", nil
	r.StartedAt = r.StartedAt.UTC()
	row := runRow{ParentID: r.ParentID, Stage: string(r.Stage), DeliveryDay: r.Day.String(), Status: string(r.Status),
		TriggeredBy: r.Trigger, Attempt: r.Attempt, StartedAt: r.StartedAt}
	if _, err := db.bun.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		return pipeline.Run{}, fmt.Errorf("create run %s %s: %w", r.Stage, r.Day, busyAsUnavailable(err))
	}
	r.ID = row.ID
	return r, nil
}

func validStage(s pipeline.Stage) bool {
	_, err := pipeline.ParseStage(string(s))
	return err == nil
}

// FinishRun ends a running run as succeeded or failed with its error text
// and outputs. A run that is no longer running (FailStaleRuns gave it up, or
// it was finished already) is not changed: the error is a Conflict, so a
// process that was presumed dead learns that its result was not recorded.
func (db *DB) FinishRun(ctx context.Context, id int64, status pipeline.RunStatus, errText string,
	outputs json.RawMessage, now time.Time) error {
	if status != pipeline.RunSucceeded && status != pipeline.RunFailed {
		return pipeline.Errorf(pipeline.Invalid, "finish run %d: status %q is not final (want succeeded or failed)", id, status)
	}
	var out *string
	if len(outputs) > 0 {
		if !json.Valid(outputs) {
			return pipeline.Errorf(pipeline.Invalid, "finish run %d: outputs are not valid JSON", id)
		}
		out = nullable(string(outputs))
	}
	res, err := db.bun.NewUpdate().Model((*runRow)(nil)).
		Set("status = ?", string(status)).Set("error = ?", errText).Set("outputs = ?", out).
		Set("finished_at = ?", now.UTC()).
		Where("id = ?", id).Where("status = ?", string(pipeline.RunRunning)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, busyAsUnavailable(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		r, err := db.Run(ctx, id)
		if err != nil {
			return err
		}
		return pipeline.Errorf(pipeline.Conflict, "run %d is %s already, not running", id, r.Status)
	}
	return nil
}

// Run returns one run record.
func (db *DB) Run(ctx context.Context, id int64) (pipeline.Run, error) {
	var row runRow
	err := db.bun.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.Run{}, pipeline.Errorf(pipeline.NotFound, "run %d not found", id)
	}
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("get run %d: %w", id, err)
	}
	return row.domain()
}

// DefaultRunLimit is how many runs Runs returns when the query sets no limit.
const DefaultRunLimit = 100

// Runs lists run records, newest first.
func (db *DB) Runs(ctx context.Context, q pipeline.RunQuery) ([]pipeline.Run, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	var rows []runRow
	sel := db.bun.NewSelect().Model(&rows).Order("id DESC").Limit(int64(limit))
	if q.Day != nil {
		sel = sel.Where("delivery_day = ?", q.Day.String())
	}
	if q.Stage != "" {
		sel = sel.Where("stage = ?", string(q.Stage))
	}
	if q.ParentID != nil {
		sel = sel.Where("parent_id = ?", *q.ParentID)
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]pipeline.Run, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FailStaleRuns marks every running run failed with reason as its error. The
// scheduler calls it when it becomes leader: runs are executed by one
// process at a time, so a run still marked running then belongs to a
// process that ended before finishing it. It returns how many were marked.
func (db *DB) FailStaleRuns(ctx context.Context, now time.Time, reason string) (int, error) {
	res, err := db.bun.NewUpdate().Model((*runRow)(nil)).
		Set("status = ?", string(pipeline.RunFailed)).Set("error = ?", reason).Set("finished_at = ?", now.UTC()).
		Where("status = ?", string(pipeline.RunRunning)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("fail stale runs: %w", busyAsUnavailable(err))
	}
	n, err := res.RowsAffected()
	return int(n), err
}
