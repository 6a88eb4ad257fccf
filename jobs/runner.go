// Package jobs runs the day-ahead chain: it reads the staging area, hands the
// data to the pure stage functions of pipeline/, writes their Arrow records to
// the Parquet lake, materializes the read models, writes schedule messages to
// the outbox, and records every run. The scheduler (scheduler.go) fires the
// stages on cron in Europe/Berlin time on the one process that holds the
// leader lock.
//
// Stages talk to each other only through published results: the forecast
// stage publishes forecast_malo to the lake, the aggregate stage reads the
// latest complete forecast_malo snapshot of the day, and so on. A stage run
// has one commit point (Committer): its lake tables, its read model, its
// schedule versions and its success commit in one database transaction. A
// stage that fails publishes nothing, so the previous complete run stays
// what readers and the next stage see, and a stage run twice on the same
// inputs produces the same outputs.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
	"github.com/schedbridge/schedbridge/pipeline/slp"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// Store is what the runner needs of the database.
type Store interface {
	Portfolios(ctx context.Context) ([]pipeline.Portfolio, error)
	RecordEvent(ctx context.Context, ev pipeline.Event) error

	CreateRun(ctx context.Context, r pipeline.Run) (pipeline.Run, error)
	CreateRunOnce(ctx context.Context, r pipeline.Run) (pipeline.Run, bool, error)
	FinishRun(ctx context.Context, id int64, status pipeline.RunStatus, errText string, outputs json.RawMessage, now time.Time) error
	Runs(ctx context.Context, q pipeline.RunQuery) ([]pipeline.Run, error)
	Run(ctx context.Context, id int64) (pipeline.Run, error)
	HeartbeatRuns(ctx context.Context, ids []int64, now time.Time) (gone []int64, err error)
	FailStaleRuns(ctx context.Context, now time.Time, staleAfter time.Duration, reason string) ([]int64, error)
	AppendRunLog(ctx context.Context, line pipeline.RunLogLine) error

	CountVersions(ctx context.Context, kind, portfolio string, currentOnly bool) (int, error)
	CurrentLocations(ctx context.Context, portfolio string, batch int, fn func([]pipeline.Location) error) error
	MeteredHistory(ctx context.Context, portfolio string, days []pipeline.Day, fn func(pipeline.MeteredEntry) error) error
	ProfilesForDay(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.ProfileEntry, error)
	Forecast(ctx context.Context, portfolio string, day pipeline.Day, version int) (pipeline.StoredForecast, error)
	Trades(ctx context.Context, portfolio string, day pipeline.Day) (pipeline.TradeSet, int, error)

	PublishPositions(ctx context.Context, runID int64, day pipeline.Day, rows []pipeline.PositionRow) error
	PublishOpenPosition(ctx context.Context, runID int64, day pipeline.Day, rows []pipeline.OpenPositionRow) error

	RecordSchedule(ctx context.Context, m pipeline.ScheduleMessage) (pipeline.ScheduleMessage, bool, error)
	LatestSchedule(ctx context.Context, portfolio string, day pipeline.Day, area pipeline.ControlArea) (pipeline.ScheduleMessage, error)
	UndeliveredSchedules(ctx context.Context, limit int) ([]pipeline.ScheduleMessage, error)
	MarkScheduleDelivered(ctx context.Context, id int64, at time.Time) (bool, error)

	RecordRunParts(ctx context.Context, runID int64, job string, parts []pipeline.RunPart, now time.Time) error

	KalkulationStore
}

// Committer is the commit point of a run (storage/commit): CommitRun
// publishes the lake parts that the run's jobs recorded (RecordRunParts) and
// runs apply, which writes the run's other results and its success through
// the Store with the context it is given, all in one database transaction.
// apply may run more than once when the commit loses to a concurrent one.
type Committer interface {
	CommitRun(ctx context.Context, runID int64, day pipeline.Day, apply func(ctx context.Context) error) error
}

// Lake is the Parquet dataset store (storage/lake).
type Lake interface {
	Create(ctx context.Context, dataset string, day pipeline.Day, runID int64, schema *arrow.Schema, opts ...lake.CreateOption) (*lake.Writer, error)
	Latest(ctx context.Context, dataset string, day pipeline.Day) (lake.Snapshot, error)
	Read(ctx context.Context, s lake.Snapshot, columns []string, fn func(arrow.RecordBatch) error) error
	Scan(ctx context.Context, s lake.Snapshot, cols lake.ScanColumns, fn func(*lake.Block) error) error
}

// Outbox is where schedule messages go: the object store. Get reads a
// message back for the period calculation.
type Outbox interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Stat(ctx context.Context, key string) (pipeline.ObjectInfo, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// Config tunes the runner. Zero values take the defaults noted.
type Config struct {
	Now   func() time.Time
	Alloc memory.Allocator
	// Logger receives the runner's log lines. The lines a run writes at
	// info level and above are also recorded with the run (run_logs),
	// whatever level Logger lets through.
	Logger *slog.Logger
	// Forecast configures forecast generation; Profiles and StateOf are
	// filled in when nil.
	Forecast forecast.Config
	// States maps an MGA to the state whose public holidays its DSO applies;
	// MGAs not listed use the national holidays only.
	States map[string]calendar.State
	// TSOParty and AreaEIC are the receivers and domains of schedule
	// messages per control area (defaults: fahrplan.DefaultTSOParty and
	// fahrplan.ControlAreaEIC).
	TSOParty map[pipeline.ControlArea]string
	AreaEIC  map[pipeline.ControlArea]string
	// Attempts per stage in a chain (default 3) and the wait before the
	// first retry (default 30 s), doubled for each further retry.
	Attempts int
	Backoff  time.Duration
	// Progress, when set, is told how far a stage is (e.g. locations done
	// of total); the command line draws it.
	Progress func(stage pipeline.Stage, done, total int64)
	// Sleep waits between retries; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Heartbeat is how often the runner refreshes the heartbeat of each run
	// it executes (default DefaultHeartbeat), so that the scheduler's leader
	// fails only runs whose process is gone (SchedulerConfig.StaleAfter,
	// which must be longer).
	Heartbeat time.Duration
	// Tick drives the heartbeat and, while a scheduler over this runner
	// leads, its check for stale runs (default time.NewTicker); tests
	// replace it.
	Tick TickFunc
	// Commit is the commit point of the stages' runs (required to run
	// stages).
	Commit Committer
	// Fault, when set, is called at each commit boundary of a stage run
	// (the Fault* points), for tests that end the process there the way
	// kill -9 does.
	Fault func(point string)
}

// The commit boundaries of a stage run, in order, at which Config.Fault is
// called.
const (
	// FaultFiles: the run's Parquet files are at their final keys and
	// recorded as its parts; nothing is committed.
	FaultFiles = "files"
	// FaultCatalog: inside the commit's transaction, after the catalog's
	// swap of the run's tables.
	FaultCatalog = "catalog"
	// FaultReadModel: inside the transaction, after the read model and the
	// schedule versions, before the run's record.
	FaultReadModel = "read-model"
	// FaultCommitted: the transaction has committed; the schedules are not
	// delivered to the outbox yet.
	FaultCommitted = "committed"
)

// fault calls the fault hook at a commit boundary.
func (r *Runner) fault(point string) {
	if r.cfg.Fault != nil {
		r.cfg.Fault(point)
	}
}

// Runner executes stages and chains. It runs one stage at a time per
// process; the scheduler's leader lock keeps other processes from running
// cron stages at the same time. Start and Retry run in the background until
// Shutdown; RunStage and Orchestrate run in their caller's goroutine.
type Runner struct {
	store  Store
	lake   Lake
	outbox Outbox
	cfg    Config
	log    *slog.Logger
	m      metrics
	mu     runLock

	// bg is cancelled by Shutdown, and with it every background run.
	bg   context.Context
	stop context.CancelCauseFunc
	// bgMu guards closed, so that no background run is added once
	// Shutdown has begun to wait for them.
	bgMu    sync.Mutex
	closed  bool
	running sync.WaitGroup

	// live are the runs this runner has recorded and not yet finished,
	// whose heartbeat it refreshes (false once their commit has recorded
	// their success); beatStop ends the goroutine that does, nil while none
	// runs. Both are guarded by liveMu.
	liveMu   sync.Mutex
	live     map[int64]bool
	beatStop chan struct{}
}

// runLock is the runner's one-run-at-a-time lock. It is a channel rather
// than a sync.Mutex so that a background run waiting for it can give up
// when the runner shuts down.
type runLock chan struct{}

func (l runLock) Lock()   { l <- struct{}{} }
func (l runLock) Unlock() { <-l }

// TryLock takes the lock if it is free.
func (l runLock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// LockContext takes the lock unless ctx ends first.
func (l runLock) LockContext(ctx context.Context) error {
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	// Both may have been ready; a run whose context ended does not start.
	if ctx.Err() != nil {
		l.Unlock()
		return context.Cause(ctx)
	}
	return nil
}

// New returns a runner.
func New(store Store, lk Lake, outbox Outbox, cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Alloc == nil {
		cfg.Alloc = memory.DefaultAllocator
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Forecast.Profiles == nil {
		cfg.Forecast.Profiles = slp.NewTable()
	}
	if cfg.Forecast.Alloc == nil {
		cfg.Forecast.Alloc = cfg.Alloc
	}
	if cfg.Forecast.StateOf == nil {
		states := cfg.States
		cfg.Forecast.StateOf = func(mga string) calendar.State { return states[mga] }
	}
	if cfg.TSOParty == nil {
		cfg.TSOParty = defaultTSOParty()
	}
	if cfg.AreaEIC == nil {
		cfg.AreaEIC = defaultAreaEIC()
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 30 * time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Tick == nil {
		cfg.Tick = wallTicker
	}
	r := &Runner{store: store, lake: lk, outbox: outbox, cfg: cfg, m: newMetrics(), mu: make(runLock, 1), live: map[int64]bool{}}
	r.log = slog.New(&runLogHandler{next: cfg.Logger.Handler(), rec: &runLogRecorder{store: store, now: cfg.Now, log: cfg.Logger}})
	r.bg, r.stop = context.WithCancelCause(context.Background())
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RunStage runs one stage for the day now, once. The returned run is
// finished; when it failed, the error says why.
func (r *Runner) RunStage(ctx context.Context, stage pipeline.Stage, day pipeline.Day, trigger string) (pipeline.Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runStage(ctx, stage, day, trigger, nil, nil, 1)
}

// Orchestrate runs the whole chain for the day: each stage with retries and
// backoff; a stage that still fails stops the chain.
func (r *Runner) Orchestrate(ctx context.Context, day pipeline.Day, trigger string) (pipeline.Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	chain, err := r.store.CreateRun(ctx, pipeline.Run{
		Stage: pipeline.StageChain, Day: day, Status: pipeline.RunRunning, Trigger: trigger, Attempt: 1, StartedAt: r.cfg.Now(),
	})
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("orchestrate %s: %w", day, err)
	}
	r.track(chain.ID)
	return r.runChain(ctx, chain)
}

// runChain runs the stages of a recorded chain from its FromStage (the
// first stage when it names none) to the end, each with retries, and
// finishes the chain's record. The caller holds r.mu.
func (r *Runner) runChain(ctx context.Context, chain pipeline.Run) (pipeline.Run, error) {
	ctx = withRunLog(ctx, chain.ID)
	from := chain.FromStage
	if from == "" {
		from = pipeline.Stages[0]
	}
	stages := pipeline.Stages[slices.Index(pipeline.Stages, from):]
	r.event(ctx, "run.started", chain, nil)
	r.log.InfoContext(ctx, "chain started", "day", chain.Day.String(), "run", chain.ID, "from_stage", from, "trigger", chain.Trigger)
	var summary []map[string]any
	var chainErr error
	for _, st := range stages {
		run, err := r.withRetries(ctx, st, chain.Day, chain.Trigger, &chain.ID, nil)
		summary = append(summary, map[string]any{"stage": st, "run_id": run.ID, "status": run.Status, "attempt": run.Attempt})
		if err != nil {
			chainErr = fmt.Errorf("stage %s: %w", st, err)
			r.log.ErrorContext(ctx, "stage failed, the chain stops", "stage", st, "run", run.ID, "attempt", run.Attempt, "err", err)
			break
		}
		r.log.InfoContext(ctx, "stage succeeded", "stage", st, "run", run.ID, "attempt", run.Attempt)
	}
	out, _ := json.Marshal(map[string]any{"stages": summary})
	chain, err := r.finish(ctx, chain, chainErr, out)
	r.log.InfoContext(ctx, "chain finished", "day", chain.Day.String(), "run", chain.ID, "status", chain.Status)
	return chain, err
}

// withRetries runs a stage until it succeeds or the attempts are used up,
// waiting Backoff, 2 x Backoff, ... between attempts. slot, when not nil,
// is the cron slot the scheduler fires the stage for.
func (r *Runner) withRetries(ctx context.Context, st pipeline.Stage, day pipeline.Day, trigger string, parent *int64, slot *time.Time) (pipeline.Run, error) {
	wait := r.cfg.Backoff
	for attempt := 1; ; attempt++ {
		run, err := r.runStage(ctx, st, day, trigger, parent, slot, attempt)
		if err == nil || attempt >= r.cfg.Attempts || ctx.Err() != nil || !retryable(err) {
			return run, err
		}
		if run.ID == 0 && pipeline.KindOf(err) == pipeline.Conflict {
			// The record was refused: this attempt of the cron slot ran
			// on another process already.
			return run, err
		}
		r.event(ctx, "stage.retry", run, map[string]any{"attempt": attempt, "next_attempt_in_s": wait.Seconds(), "error": err.Error()})
		r.log.WarnContext(ctx, "stage failed, retrying", "stage", st, "day", day.String(), "attempt", attempt, "wait_s", wait.Seconds(), "err", err)
		if err := r.cfg.Sleep(ctx, wait); err != nil {
			return run, err
		}
		wait *= 2
	}
}

// retryable reports whether another attempt can help: bad input, a
// missing prerequisite and a permanent failure of the stores (a file of the
// lake that is gone, a warehouse that moved) stay as they are until someone
// acts, so they are not retried.
func retryable(err error) bool {
	if pipeline.Permanent(err) {
		return false
	}
	switch pipeline.KindOf(err) {
	case pipeline.Invalid, pipeline.NotFound, pipeline.Forbidden:
		return false
	}
	return true
}

// stageFunc does the work of one stage: it writes the run's lake files,
// records them as the run's parts, and returns what the commit needs.
type stageFunc func(ctx context.Context, run pipeline.Run, ps []pipeline.Portfolio) (stageResult, error)

// stageResult is what a stage's work leaves for the run's commit.
type stageResult struct {
	// outputs describe the run; they are recorded with its success.
	outputs any
	// apply writes the run's results to the database within the commit's
	// transaction (its read model, its schedule versions), with the
	// context it is given. It must not log: the run's log is written
	// outside the transaction, which on SQLite would wait for it.
	apply func(ctx context.Context) error
	// after runs once the commit has landed: the schedules' delivery to
	// the outbox.
	after func(ctx context.Context)
}

func (r *Runner) stageFunc(st pipeline.Stage) stageFunc {
	switch st {
	case pipeline.StageForecast:
		return r.forecastStage
	case pipeline.StageAggregate:
		return r.aggregateStage
	case pipeline.StageOpenPosition:
		return r.openPositionStage
	case pipeline.StageSchedules:
		return r.schedulesStage
	case pipeline.StageKalkulation:
		return r.kalkulationStage
	}
	return nil
}

func (r *Runner) runStage(ctx context.Context, st pipeline.Stage, day pipeline.Day, trigger string, parent *int64, slot *time.Time, attempt int) (pipeline.Run, error) {
	if r.stageFunc(st) == nil {
		return pipeline.Run{}, pipeline.Errorf(pipeline.Invalid, "unknown stage %q", st)
	}
	run, err := r.store.CreateRun(ctx, pipeline.Run{
		ParentID: parent, Stage: st, Day: day, Status: pipeline.RunRunning, Trigger: trigger, Attempt: attempt, StartedAt: r.cfg.Now(),
		CronSlot: slot,
	})
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("stage %s %s: record run: %w", st, day, err)
	}
	r.track(run.ID)
	return r.execStage(ctx, run)
}

// execStage does the work of a recorded stage run and finishes its record.
// Its log lines are the run's. The caller holds r.mu.
func (r *Runner) execStage(ctx context.Context, run pipeline.Run) (pipeline.Run, error) {
	ctx = withRunLog(ctx, run.ID)
	st, day := run.Stage, run.Day
	fn := r.stageFunc(st)
	r.event(ctx, "run.started", run, nil)
	r.log.InfoContext(ctx, "stage started", "stage", st, "day", day.String(), "run", run.ID, "attempt", run.Attempt)
	started := time.Now()
	// The labels let a CPU profile of the service (/debug/pprof) or of a
	// benchmark be split by stage and by its commit:
	// `go tool pprof -tagfocus stage=forecast,phase=commit`. Goroutines the
	// stage starts inherit them.
	var (
		ps       []pipeline.Portfolio
		res      stageResult
		out      json.RawMessage
		finished time.Time // set when the commit recorded the run's success
		err      error
	)
	pprof.Do(ctx, pprof.Labels("stage", string(st), "phase", "work"), func(ctx context.Context) {
		ps, err = r.store.Portfolios(ctx)
		if err == nil {
			res, err = fn(ctx, run, ps)
		}
	})
	if res.outputs != nil {
		out, _ = json.Marshal(res.outputs)
	}
	if err == nil {
		pprof.Do(ctx, pprof.Labels("stage", string(st), "phase", "commit"), func(ctx context.Context) {
			finished, err = r.commit(ctx, run, res, out)
		})
	}
	if err != nil {
		err = fmt.Errorf("stage %s %s: %w", st, day, err)
	}
	var ferr error
	if !finished.IsZero() {
		run = r.committed(ctx, run, out, finished)
		if res.after != nil {
			res.after(ctx)
		}
	} else {
		run, ferr = r.finish(ctx, run, err, out)
	}
	attrs := []any{"stage", st, "day", day.String(), "run", run.ID, "status", run.Status, "duration_s", time.Since(started).Seconds()}
	if ferr != nil {
		// The error is the run's: it goes to its log with the other lines.
		r.log.ErrorContext(ctx, "stage finished", append(attrs, "err", ferr)...)
	} else {
		r.log.InfoContext(ctx, "stage finished", attrs...)
	}
	return run, ferr
}

// commit makes the stage run's results current at the one commit point: its
// lake tables, what res.apply writes, and its success, in one transaction.
// It returns the time recorded as the run's end.
func (r *Runner) commit(ctx context.Context, run pipeline.Run, res stageResult, out json.RawMessage) (time.Time, error) {
	if r.cfg.Commit == nil {
		return time.Time{}, errors.New("no commit point configured (jobs.Config.Commit)")
	}
	r.fault(FaultFiles)
	now := r.cfg.Now()
	err := r.cfg.Commit.CommitRun(ctx, run.ID, run.Day, func(ctx context.Context) error {
		r.fault(FaultCatalog)
		if res.apply != nil {
			if err := res.apply(ctx); err != nil {
				return err
			}
		}
		r.fault(FaultReadModel)
		// The record is finished only if it is still running: when the
		// leader has failed the run as stale meanwhile, this is a
		// Conflict and the whole commit rolls back, so a run that the
		// leader failed has published nothing.
		if err := r.store.FinishRun(ctx, run.ID, pipeline.RunSucceeded, "", out, now); err != nil {
			return err
		}
		// From here the record is finished as soon as the transaction
		// commits: a heartbeat that then finds it no longer running must
		// not take it for one that the leader failed.
		r.committing(run.ID)
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("commit: %w", err)
	}
	r.fault(FaultCommitted)
	return now, nil
}

// committed completes a run whose commit recorded its success at finished.
func (r *Runner) committed(ctx context.Context, run pipeline.Run, out json.RawMessage, finished time.Time) pipeline.Run {
	r.untrack(run.ID)
	run.FinishedAt, run.Outputs, run.Status = &finished, out, pipeline.RunSucceeded
	r.observe(run)
	r.event(context.WithoutCancel(ctx), "run.succeeded", run, nil)
	return run
}

// finish records the end of a run and its event. The stage's error wins
// over a failure to record it.
func (r *Runner) finish(ctx context.Context, run pipeline.Run, stageErr error, out json.RawMessage) (pipeline.Run, error) {
	if stageErr != nil && errors.Is(context.Cause(ctx), errShutdown) && !errors.Is(stageErr, errShutdown) {
		// Say why the work was cancelled: the stage's own error often
		// reads just "context canceled".
		stageErr = fmt.Errorf("%w (%w)", stageErr, errShutdown)
	}
	now := r.cfg.Now()
	run.FinishedAt = &now
	run.Outputs = out
	run.Status = pipeline.RunSucceeded
	if stageErr != nil {
		run.Status = pipeline.RunFailed
		run.Error = stageErr.Error()
	}
	// The work is over: the run needs no more heartbeats. It leaves the
	// live set before its record is finished, so that a heartbeat in
	// flight does not take the finished record for one that the leader
	// failed as stale. Should the write below fail, the record, no longer
	// beating, is failed by the leader after the staleness threshold.
	r.untrack(run.ID)
	// The run record is written even when the stage's context was
	// cancelled, so a shutdown does not leave it running.
	wctx := context.WithoutCancel(ctx)
	if err := r.store.FinishRun(wctx, run.ID, run.Status, run.Error, out, now); err != nil && stageErr == nil {
		stageErr = fmt.Errorf("record run %d: %w", run.ID, err)
	}
	r.observe(run)
	kind := "run.succeeded"
	if run.Status == pipeline.RunFailed {
		kind = "run.failed"
	}
	r.event(wctx, kind, run, nil)
	return run, stageErr
}

// event records a console event about a run; failing to record one is
// logged, not fatal, because the run record itself is the source of truth.
func (r *Runner) event(ctx context.Context, kind string, run pipeline.Run, extra map[string]any) {
	if err := r.store.RecordEvent(ctx, runEvent(r.cfg.Now(), kind, run, extra)); err != nil {
		r.log.WarnContext(ctx, "record event", "kind", kind, "err", err)
	}
}

// runEvent is the console event of kind about run at at, extra added to
// its data.
func runEvent(at time.Time, kind string, run pipeline.Run, extra map[string]any) pipeline.Event {
	data := map[string]any{"run_id": run.ID, "stage": run.Stage, "status": run.Status, "attempt": run.Attempt, "trigger": run.Trigger}
	if run.ParentID != nil {
		data["parent_id"] = *run.ParentID
	}
	if run.Error != "" {
		data["error"] = run.Error
	}
	for k, v := range extra {
		data[k] = v
	}
	b, _ := json.Marshal(data)
	day := run.Day
	return pipeline.Event{At: at, Kind: kind, Subject: fmt.Sprintf("%s %s run %d", run.Stage, run.Day, run.ID), DeliveryDay: &day, Data: b}
}

// progress reports progress when someone listens.
func (r *Runner) progress(st pipeline.Stage, done, total int64) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(st, done, total)
	}
}

// latest finds the latest complete snapshot of a dataset that a stage needs,
// with an error that says which stage to run first.
func (r *Runner) latest(ctx context.Context, dataset string, day pipeline.Day, producer pipeline.Stage) (lake.Snapshot, error) {
	s, err := r.lake.Latest(ctx, dataset, day)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return s, pipeline.Errorf(pipeline.NotFound, "no complete %s snapshot for %s: run the %s stage first", dataset, day, producer)
	}
	if err != nil {
		return s, err
	}
	// A run's snapshot becomes current only with its success, at its
	// commit point. A snapshot that an older version of the service
	// published before its run failed (it had two commit points) is no
	// input: a stage reads committed runs only.
	run, err := r.store.Run(ctx, s.RunID)
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return s, nil // a run of another database's history, imported with its files
	case err != nil:
		return s, err
	case run.Status != pipeline.RunSucceeded:
		return s, pipeline.Errorf(pipeline.NotFound, "the current %s snapshot for %s is of run %d, which is %s, not succeeded: run the %s stage again",
			dataset, day, run.ID, run.Status, producer)
	}
	return s, nil
}
