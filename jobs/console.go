package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/schedbridge/schedbridge/pipeline"
)

// errShutdown is why the background runs are cancelled when the runner
// shuts down; a run it cancels is finished as failed with it in its error.
var errShutdown = errors.New("the runner shut down")

// Start records a run of req.Stage (a stage, or StageChain for the chain
// from req.FromStage on) for req.Day and executes it in the background. It
// returns as soon as the record exists: the run is running then, and its id
// names it to the caller. The run does not end with ctx, which may be a
// request's, nor does it take ctx's values; it ends when it is done or when
// the runner shuts down.
//
// A stage runs once, as RunStage runs it; a chain runs its stages with
// retries, as Orchestrate does. Like them, background runs wait for the one
// stage at a time that the runner executes.
//
// When req.IdempotencyKey names a run that exists already, Start returns
// that run as it is now with created false, and starts nothing: the caller
// compares its RequestHash with req.RequestHash to tell a repeat from a
// different request under the same key. A request that is not valid is an
// Invalid error, a runner that is shutting down Unavailable.
func (r *Runner) Start(ctx context.Context, req pipeline.StartRequest) (run pipeline.Run, created bool, err error) {
	if err := checkStart(req); err != nil {
		return pipeline.Run{}, false, err
	}
	r.bgMu.Lock()
	if r.closed {
		r.bgMu.Unlock()
		return pipeline.Run{}, false, pipeline.Errorf(pipeline.Unavailable, "the runner is shutting down: start the run again later")
	}
	// Counted before the record is written, so that Shutdown waits for a
	// run that was recorded while it began, and that run is finished.
	r.running.Add(1)
	r.bgMu.Unlock()

	run, created, err = r.store.CreateRunOnce(ctx, pipeline.Run{
		Stage: req.Stage, Day: req.Day, Status: pipeline.RunRunning, Trigger: req.Trigger, Attempt: 1, StartedAt: r.cfg.Now(),
		RetryOf: req.RetryOf, FromStage: req.FromStage, IdempotencyKey: req.IdempotencyKey, RequestHash: req.RequestHash,
	})
	if err != nil || !created {
		r.running.Done()
		if err != nil {
			return pipeline.Run{}, false, fmt.Errorf("start %s %s: %w", req.Stage, req.Day, err)
		}
		return run, false, nil
	}
	// The record says running from now on, also while the run waits for
	// the runner: it gets heartbeats until it is finished, so that the
	// scheduler's leader, on this replica or another, leaves it alone.
	r.track(run.ID)
	// The run's context is the runner's, not the caller's: a request that
	// started the run may end long before it, and Shutdown cancels the
	// runner's context and with it every run at once.
	go func() {
		defer r.running.Done()
		r.execute(r.bg, run)
	}()
	return run, true, nil
}

// checkStart validates a start request before anything is recorded.
func checkStart(req pipeline.StartRequest) error {
	switch {
	case req.Stage == pipeline.StageChain:
		if req.FromStage != "" && !slices.Contains(pipeline.Stages, req.FromStage) {
			return pipeline.Errorf(pipeline.Invalid, "from stage %q: a chain starts at forecast, aggregate, open-position or schedules", req.FromStage)
		}
	case slices.Contains(pipeline.AllStages, req.Stage):
		if req.FromStage != "" {
			return pipeline.Errorf(pipeline.Invalid, "from stage %q: only a chain starts at a stage, and %s is a single stage", req.FromStage, req.Stage)
		}
	default:
		return pipeline.Errorf(pipeline.Invalid, "stage %q: want forecast, aggregate, open-position, schedules, kalkulation or chain", req.Stage)
	}
	if req.Day.IsZero() {
		return pipeline.Errorf(pipeline.Invalid, "run of %s: a delivery day is required", req.Stage)
	}
	return nil
}

// execute runs a recorded run once it has the runner's lock. A run that the
// shutdown cancels while it waits for the lock is finished as failed.
func (r *Runner) execute(ctx context.Context, run pipeline.Run) {
	ctx = withRunLog(ctx, run.ID)
	var err error
	if !r.mu.TryLock() {
		// The record says running from the start; its log says why
		// nothing happens yet.
		r.log.InfoContext(ctx, "waiting for the runner's current run to end", "stage", run.Stage, "day", run.Day.String(), "run", run.ID)
		err = r.mu.LockContext(ctx)
	} else if ctx.Err() != nil {
		r.mu.Unlock()
		err = context.Cause(ctx)
	}
	if err != nil {
		err = fmt.Errorf("%s %s: not started: %w", run.Stage, run.Day, err)
		r.log.WarnContext(ctx, "run cancelled before it started", "stage", run.Stage, "day", run.Day.String(), "run", run.ID, "err", err)
		_, _ = r.finish(ctx, run, err, nil)
		return
	}
	defer r.mu.Unlock()
	if run.Stage == pipeline.StageChain {
		_, _ = r.runChain(ctx, run)
		return
	}
	// The error is in the run's record and its log.
	_, _ = r.execStage(ctx, run)
}

// Retry starts the run that retries the failed run id, in the background as
// Start does, and with Start's idempotency (req carries Trigger,
// IdempotencyKey and RequestHash; its other fields are ignored). The new
// run's RetryOf is id.
//
//   - A failed stage run of its own is run again: a new run of its stage
//     for its day.
//   - A failed chain is resumed: a new chain for its day that starts at the
//     first of its stages without a successful run in it (FromStage), so the
//     stages that succeeded are not run again.
//   - A failed stage run of a chain resumes that chain in the same way,
//     which starts at the failed stage unless a later attempt of it
//     succeeded within the chain.
//
// An unknown run is NotFound. A run that is running or succeeded, a run of
// a chain that is running or succeeded, and a failed chain whose stages all
// succeeded are a Conflict: there is nothing to retry.
func (r *Runner) Retry(ctx context.Context, id int64, req pipeline.StartRequest) (pipeline.Run, bool, error) {
	run, err := r.store.Run(ctx, id)
	if err != nil {
		return pipeline.Run{}, false, fmt.Errorf("retry run %d: %w", id, err)
	}
	if err := canRetry(run); err != nil {
		return pipeline.Run{}, false, err
	}
	start := pipeline.StartRequest{Stage: run.Stage, Day: run.Day, Trigger: req.Trigger, RetryOf: &id,
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.RequestHash}
	chain := run
	if run.Stage != pipeline.StageChain && run.ParentID != nil {
		if chain, err = r.store.Run(ctx, *run.ParentID); err != nil {
			return pipeline.Run{}, false, fmt.Errorf("retry run %d: its chain: %w", id, err)
		}
		if err := canRetry(chain); err != nil {
			return pipeline.Run{}, false, pipeline.Errorf(pipeline.Conflict, "run %d is a stage run of chain run %d: %s", id, chain.ID, pipeline.MessageOf(err))
		}
	}
	if chain.Stage == pipeline.StageChain {
		from, err := r.resumeAt(ctx, chain)
		if err != nil {
			return pipeline.Run{}, false, err
		}
		start.Stage, start.FromStage = pipeline.StageChain, from
	}
	return r.Start(ctx, start)
}

// canRetry answers a Conflict for a run that is not failed.
func canRetry(run pipeline.Run) error {
	switch run.Status {
	case pipeline.RunFailed:
		return nil
	case pipeline.RunRunning:
		return pipeline.Errorf(pipeline.Conflict, "run %d is still running; retry it once it has failed", run.ID)
	case pipeline.RunSucceeded:
		return pipeline.Errorf(pipeline.Conflict, "run %d succeeded; there is nothing to retry", run.ID)
	}
	return pipeline.Errorf(pipeline.Conflict, "run %d is %s; only a failed run can be retried", run.ID, run.Status)
}

// resumeAt is the stage a retry of the failed chain starts at: the first of
// the chain's stages without a successful run in it.
func (r *Runner) resumeAt(ctx context.Context, chain pipeline.Run) (pipeline.Stage, error) {
	done, err := r.store.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID, Status: pipeline.RunSucceeded, Limit: 1000})
	if err != nil {
		return "", fmt.Errorf("retry chain run %d: its stage runs: %w", chain.ID, err)
	}
	from := chain.FromStage
	if from == "" {
		from = pipeline.Stages[0]
	}
	for _, st := range pipeline.Stages[slices.Index(pipeline.Stages, from):] {
		if !slices.ContainsFunc(done, func(r pipeline.Run) bool { return r.Stage == st }) {
			return st, nil
		}
	}
	return "", pipeline.Errorf(pipeline.Conflict, "every stage of chain run %d succeeded (from %s on); there is nothing to retry", chain.ID, from)
}

// Shutdown cancels the background runs that Start and Retry began and
// waits until they have ended, each finished as failed unless it was done;
// Start refuses new runs from then on. It returns early with an error when
// ctx ends first; the runs still end, but their records may then be left
// running until a scheduler fails them as stale. Runs of RunStage and
// Orchestrate end with their callers' contexts, not with Shutdown. Calling
// Shutdown again waits again.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.bgMu.Lock()
	r.closed = true
	r.bgMu.Unlock()
	r.stop(errShutdown)
	done := make(chan struct{})
	go func() {
		r.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runner shutdown: background runs still running: %w", context.Cause(ctx))
	}
}
