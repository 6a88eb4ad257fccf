package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	RetryOf     *int64     `bun:"retry_of"`
	FromStage   string     `bun:"from_stage"`
	// IdempotencyKey is NULL for runs without a key, so that the unique
	// index holds only the keys that were given.
	IdempotencyKey *string `bun:"idempotency_key"`
	RequestHash    string  `bun:"request_hash"`
	// HeartbeatAt is when the process executing the run last said it was
	// alive (HeartbeatRuns); NULL for runs recorded before heartbeats.
	HeartbeatAt *time.Time `bun:"heartbeat_at"`
	// CronSlot is the cron slot that the scheduler fired the run for; NULL
	// for runs that were not fired by cron. Unique per stage, day and
	// attempt (runs_cron_slot).
	CronSlot *time.Time `bun:"cron_slot"`
}

func (r runRow) domain() (pipeline.Run, error) {
	day, err := pipeline.ParseDay(r.DeliveryDay)
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("run %d: stored %w", r.ID, err)
	}
	out := pipeline.Run{
		ID: r.ID, ParentID: r.ParentID, Stage: pipeline.Stage(r.Stage), Day: day, Status: pipeline.RunStatus(r.Status),
		Trigger: r.TriggeredBy, Attempt: r.Attempt, StartedAt: r.StartedAt.UTC(), Error: r.Error,
		RetryOf: r.RetryOf, FromStage: pipeline.Stage(r.FromStage), RequestHash: r.RequestHash,
	}
	if r.IdempotencyKey != nil {
		out.IdempotencyKey = *r.IdempotencyKey
	}
	if r.FinishedAt != nil {
		t := r.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	if r.HeartbeatAt != nil {
		t := r.HeartbeatAt.UTC()
		out.HeartbeatAt = &t
	}
	if r.CronSlot != nil {
		t := r.CronSlot.UTC()
		out.CronSlot = &t
	}
	if r.Outputs != nil {
		out.Outputs = json.RawMessage(*r.Outputs)
	}
	return out, nil
}

// CreateRun records the start of a run and returns it with its ID. The
// record always starts as running, whatever r.Status says: only FinishRun
// and FailStaleRuns end a run. A run with an IdempotencyKey that another run
// has already is a Conflict; CreateRunOnce returns the other run instead. So
// is a run of a CronSlot that has a run of the same stage, day and attempt.
func (db *DB) CreateRun(ctx context.Context, r pipeline.Run) (pipeline.Run, error) {
	r, row, err := newRunRow(r)
	if err != nil {
		return pipeline.Run{}, err
	}
	if _, err := db.bun.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			what := "a run with this idempotency key exists"
			if r.CronSlot != nil {
				what = fmt.Sprintf("attempt %d of cron slot %s ran already", r.Attempt, r.CronSlot.Format(time.RFC3339))
			}
			return pipeline.Run{}, &pipeline.Error{Kind: pipeline.Conflict,
				Message: fmt.Sprintf("create run %s %s: %s", r.Stage, r.Day, what), Err: err}
		}
		return pipeline.Run{}, fmt.Errorf("create run %s %s: %w", r.Stage, r.Day, busyAsUnavailable(err))
	}
	r.ID = row.ID
	return r, nil
}

// CreateRunOnce is CreateRun for a start that a client may send more than
// once. When r.IdempotencyKey is set and a run with that key exists, it
// returns that run as it is now, with created false and nothing written; the
// caller compares the returned RequestHash with its own to tell a repeated
// request from a different one under the same key. Two writers racing with
// one key are decided by the unique index: one creates the run, the other
// reads it. Without a key it is CreateRun.
func (db *DB) CreateRunOnce(ctx context.Context, r pipeline.Run) (run pipeline.Run, created bool, err error) {
	if r.IdempotencyKey == "" {
		run, err = db.CreateRun(ctx, r)
		return run, err == nil, err
	}
	if existing, ok, err := db.runByKey(ctx, r.IdempotencyKey); err != nil || ok {
		return existing, false, err
	}
	run, err = db.CreateRun(ctx, r)
	if pipeline.KindOf(err) != pipeline.Conflict {
		return run, err == nil, err
	}
	// Another writer inserted the key between the look-up and the insert.
	existing, ok, lerr := db.runByKey(ctx, r.IdempotencyKey)
	if lerr != nil {
		return pipeline.Run{}, false, lerr
	}
	if !ok {
		return pipeline.Run{}, false, fmt.Errorf("create run %s %s: the idempotency key was taken, yet no run has it: %w", r.Stage, r.Day, err)
	}
	return existing, false, nil
}

// runByKey returns the run with the idempotency key, if there is one.
func (db *DB) runByKey(ctx context.Context, key string) (pipeline.Run, bool, error) {
	var row runRow
	err := db.bun.NewSelect().Model(&row).Where("idempotency_key = ?", key).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.Run{}, false, nil
	}
	if err != nil {
		return pipeline.Run{}, false, fmt.Errorf("run by idempotency key: %w", err)
	}
	run, err := row.domain()
	return run, err == nil, err
}

// newRunRow checks a run to be created and returns it as it is recorded.
func newRunRow(r pipeline.Run) (pipeline.Run, runRow, error) {
	switch {
	case r.Stage != pipeline.StageChain && !validStage(r.Stage):
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run: unknown stage %q", r.Stage)
	case r.Day.IsZero():
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run of %s: delivery day is required", r.Stage)
	case r.StartedAt.IsZero():
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run of %s: start time is required", r.Stage)
	case r.FromStage != "" && r.Stage != pipeline.StageChain:
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run of %s: only a chain starts at a stage (from stage %s)", r.Stage, r.FromStage)
	case r.FromStage != "" && !slices.Contains(pipeline.Stages, r.FromStage):
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run of %s: from stage %q is not a stage of the chain", r.Stage, r.FromStage)
	case r.CronSlot != nil && (r.Stage == pipeline.StageChain || r.CronSlot.IsZero()):
		return r, runRow{}, pipeline.Errorf(pipeline.Invalid, "run of %s: a cron slot names a time, and only stage runs have one", r.Stage)
	}
	if r.Attempt <= 0 {
		r.Attempt = 1
	}
	r.Status, r.FinishedAt, r.Error, r.Outputs = pipeline.RunRunning, nil, "", nil
	r.StartedAt = r.StartedAt.UTC()
	// A run starts alive: its first heartbeat is its start.
	beat := r.StartedAt
	r.HeartbeatAt = &beat
	if r.CronSlot != nil {
		slot := r.CronSlot.UTC()
		r.CronSlot = &slot
	}
	row := runRow{ParentID: r.ParentID, Stage: string(r.Stage), DeliveryDay: r.Day.String(), Status: string(r.Status),
		TriggeredBy: r.Trigger, Attempt: r.Attempt, StartedAt: r.StartedAt, HeartbeatAt: &beat, CronSlot: r.CronSlot,
		RetryOf: r.RetryOf, FromStage: string(r.FromStage), IdempotencyKey: nullable(r.IdempotencyKey), RequestHash: r.RequestHash}
	return r, row, nil
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
	res, err := db.conn(ctx).NewUpdate().Model((*runRow)(nil)).
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
	err := db.conn(ctx).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
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

// Runs lists run records, newest first. BeforeID pages by keyset: the next
// page of a listing starts before the last id of the page before.
func (db *DB) Runs(ctx context.Context, q pipeline.RunQuery) ([]pipeline.Run, error) {
	var rows []runRow
	if err := db.runsQuery(q, &rows).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runsOf(rows)
}

// runsQuery is the query of Runs; the tests explain it.
func (db *DB) runsQuery(q pipeline.RunQuery, rows *[]runRow) *bun.SelectQuery {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	sel := db.bun.NewSelect().Model(rows).Order("id DESC").Limit(int64(limit))
	if q.Day != nil {
		sel = sel.Where("delivery_day = ?", q.Day.String())
	}
	if q.Stage != "" {
		sel = sel.Where("stage = ?", string(q.Stage))
	}
	if q.Status != "" {
		sel = sel.Where("status = ?", string(q.Status))
	}
	if q.Trigger != "" {
		sel = sel.Where("triggered_by = ?", q.Trigger)
	}
	if q.ParentID != nil {
		sel = sel.Where("parent_id = ?", *q.ParentID)
	}
	if q.BeforeID > 0 {
		sel = sel.Where("id < ?", q.BeforeID)
	}
	return sel
}

func runsOf(rows []runRow) ([]pipeline.Run, error) {
	out := make([]pipeline.Run, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LastSuccesses returns the latest succeeded run of every stage and of the
// chain, by the time it finished (the larger id when two finished at once).
// A stage that never succeeded has no entry.
func (db *DB) LastSuccesses(ctx context.Context) (map[pipeline.Stage]pipeline.Run, error) {
	var rows []runRow
	if err := db.lastSuccessesQuery().Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("last successes: %w", err)
	}
	runs, err := runsOf(rows)
	if err != nil {
		return nil, err
	}
	out := make(map[pipeline.Stage]pipeline.Run, len(runs))
	for _, r := range runs {
		out[r.Stage] = r
	}
	return out, nil
}

// lastSuccessesQuery is the query of LastSuccesses: one LIMIT 1 per stage,
// each a step into runs_succeeded, in one round trip. The status is a
// literal so that the partial index applies; a placeholder would keep
// SQLite's planner from matching it.
func (db *DB) lastSuccessesQuery() *bun.RawQuery {
	stages := append(slices.Clone(pipeline.AllStages), pipeline.StageChain)
	parts := make([]string, len(stages))
	args := make([]any, len(stages))
	for i, st := range stages {
		parts[i] = fmt.Sprintf("SELECT * FROM (SELECT * FROM runs WHERE stage = ? AND status = 'succeeded' "+
			"ORDER BY finished_at DESC, id DESC LIMIT 1) AS s%d", i)
		args[i] = string(st)
	}
	return db.bun.NewRaw(strings.Join(parts, " UNION ALL "), args...)
}

// DefaultRunLogLimit is how many lines RunLog returns when no limit is given.
const DefaultRunLogLimit = 1000

// AppendRunLog records one log line of a run. The writer numbers the lines
// of a run from 1 (one process runs a run, so it can); a seq that the run
// has already is a Conflict, and a run that does not exist is NotFound.
func (db *DB) AppendRunLog(ctx context.Context, line pipeline.RunLogLine) error {
	switch {
	case line.Seq < 1:
		return pipeline.Errorf(pipeline.Invalid, "log line of run %d: seq %d, want 1 or more", line.RunID, line.Seq)
	case line.At.IsZero():
		return pipeline.Errorf(pipeline.Invalid, "log line %d of run %d: time is required", line.Seq, line.RunID)
	case len(line.Attrs) > 0 && !json.Valid(line.Attrs):
		return pipeline.Errorf(pipeline.Invalid, "log line %d of run %d: attrs are not valid JSON", line.Seq, line.RunID)
	}
	var attrs *string
	if len(line.Attrs) > 0 {
		attrs = nullable(string(line.Attrs))
	}
	row := runLogRow{RunID: line.RunID, Seq: line.Seq, At: line.At.UTC(), Level: line.Level, Msg: line.Message, Attrs: attrs}
	_, err := db.bun.NewInsert().Model(&row).Exec(ctx)
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return &pipeline.Error{Kind: pipeline.Conflict, Message: fmt.Sprintf("run %d has a log line %d already", line.RunID, line.Seq), Err: err}
	case isForeignKeyViolation(err):
		return &pipeline.Error{Kind: pipeline.NotFound, Message: fmt.Sprintf("run %d not found", line.RunID), Err: err}
	}
	return fmt.Errorf("append log line %d of run %d: %w", line.Seq, line.RunID, busyAsUnavailable(err))
}

// RunLog returns the last limit log lines of a run (DefaultRunLogLimit when
// limit is 0 or less) in seq order: the end of a long log says how the run
// ended. A run without lines, or one that does not exist, has none.
func (db *DB) RunLog(ctx context.Context, runID int64, limit int) ([]pipeline.RunLogLine, error) {
	if limit <= 0 {
		limit = DefaultRunLogLimit
	}
	var rows []runLogRow
	if err := db.bun.NewSelect().Model(&rows).Where("run_id = ?", runID).Order("seq DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("log of run %d: %w", runID, err)
	}
	out := make([]pipeline.RunLogLine, len(rows))
	for i, r := range rows {
		l := pipeline.RunLogLine{RunID: r.RunID, Seq: r.Seq, At: r.At.UTC(), Level: r.Level, Message: r.Msg}
		if r.Attrs != nil {
			l.Attrs = json.RawMessage(*r.Attrs)
		}
		out[len(rows)-1-i] = l
	}
	return out, nil
}

type runLogRow struct {
	bun.BaseModel `bun:"table:run_logs"`

	RunID int64     `bun:"run_id,pk"`
	Seq   int       `bun:"seq,pk"`
	At    time.Time `bun:"at"`
	Level string    `bun:"level"`
	Msg   string    `bun:"msg"`
	Attrs *string   `bun:"attrs"`
}

// HeartbeatRuns records that the process executing the runs ids is alive at
// now. Runs that are no longer running (finished, or given up as stale by
// FailStaleRuns) are not changed: their ids come back as gone, so that the
// process learns that its result will not be recorded.
func (db *DB) HeartbeatRuns(ctx context.Context, ids []int64, now time.Time) (gone []int64, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var alive []int64
	err = db.bun.NewUpdate().Model((*runRow)(nil)).Set("heartbeat_at = ?", now.UTC()).
		Where("id IN (?)", bun.In(ids)).Where("status = ?", string(pipeline.RunRunning)).
		Returning("id").Scan(ctx, &alive)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("heartbeat of runs %v: %w", ids, busyAsUnavailable(err))
	}
	for _, id := range ids {
		if !slices.Contains(alive, id) {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// FailStaleRuns marks the running runs whose heartbeat is older than
// staleAfter at now failed, with reason as their error, and returns their
// ids. The process executing a run refreshes its heartbeat every few
// seconds (HeartbeatRuns), so a stale one belongs to a process that ended
// or hung before it finished; a run recorded before heartbeats existed
// counts from its start. The scheduler's leader calls it periodically.
// Runs that other processes are alive to execute, such as a stage run on
// the command line or one a console started on another replica, are left
// alone. staleAfter must be positive.
func (db *DB) FailStaleRuns(ctx context.Context, now time.Time, staleAfter time.Duration, reason string) ([]int64, error) {
	if staleAfter <= 0 {
		return nil, pipeline.Errorf(pipeline.Invalid, "fail stale runs: the staleness threshold must be positive, got %s", staleAfter)
	}
	var ids []int64
	err := db.bun.NewUpdate().Model((*runRow)(nil)).
		Set("status = ?", string(pipeline.RunFailed)).Set("error = ?", reason).Set("finished_at = ?", now.UTC()).
		Where("status = ?", string(pipeline.RunRunning)).
		Where("COALESCE(heartbeat_at, started_at) < ?", now.Add(-staleAfter).UTC()).
		Returning("id").Scan(ctx, &ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("fail stale runs: %w", busyAsUnavailable(err))
	}
	slices.Sort(ids)
	return ids, nil
}
