package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// hooked puts a catalog whose Publish calls a hook (catalogtest.Hooked)
// under the lake of the runners made after it.
func (e *env) hooked() *catalogtest.Hooked {
	hc := &catalogtest.Hooked{Catalog: e.cat}
	e.lake = lake.New(e.bucket, lake.Options{Alloc: e.alloc, Now: e.clock.Now, SpoolDir: e.tb.TempDir(), Catalog: hc})
	e.commitCat = hc
	return hc
}

// gate holds the publication of a dataset until it is opened or the
// context of the stage ends; entered says that a stage has got there.
type gate struct {
	entered chan string
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan string, 8), open: make(chan struct{})} }

func (g *gate) at(dataset string) func(ctx context.Context, p lake.Publication) error {
	return func(ctx context.Context, p lake.Publication) error {
		if p.Dataset != dataset {
			return nil
		}
		g.entered <- p.Dataset
		select {
		case <-g.open:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// gateForecast seeds the portfolio p1 and holds the publication of its
// forecast at a gate, for the runners made after it.
func (e *env) gateForecast(t *testing.T) *gate {
	t.Helper()
	e.seed(t, "p1", 10)
	g := newGate()
	e.hooked().Set(g.at(pipeline.DatasetForecastMalo))
	return g
}

// startBusy starts a forecast, which holds at g, and then a run of stage
// next, which waits for the runner until the forecast is done.
func startBusy(t *testing.T, r *jobs.Runner, g *gate, next pipeline.Stage) (working, waiting pipeline.Run) {
	t.Helper()
	ctx := context.Background()
	working, _, err := r.Start(ctx, pipeline.StartRequest{Stage: pipeline.StageForecast, Day: day, Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	waiting, _, err = r.Start(ctx, pipeline.StartRequest{Stage: next, Day: day, Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	return working, waiting
}

// failAt fails the publication of the datasets.
func failAt(datasets ...string) func(ctx context.Context, p lake.Publication) error {
	return func(_ context.Context, p lake.Publication) error {
		for _, d := range datasets {
			if p.Dataset == d {
				return errCrash
			}
		}
		return nil
	}
}

func stagesOf(runs []pipeline.Run) []pipeline.Stage {
	out := []pipeline.Stage{}
	for _, r := range runs {
		out = append(out, r.Stage)
	}
	return out
}

// chainStages lists the stage runs of a chain, oldest first.
func chainStages(t *testing.T, db *sqldb.DB, chainID int64) []pipeline.Run {
	t.Helper()
	runs, err := db.Runs(context.Background(), pipeline.RunQuery{ParentID: &chainID})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(runs)
	return runs
}

func getRun(t *testing.T, db *sqldb.DB, id int64) pipeline.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStartInBackground: Start returns the recorded run while its stage is
// still at work, the run outlives the context of the request that started
// it, and it ends succeeded with its snapshot published.
func TestStartInBackground(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		g := e.gateForecast(t)
		r := e.runner()

		reqCtx, cancelReq := context.WithCancel(context.Background())
		run, created, err := r.Start(reqCtx, pipeline.StartRequest{Stage: pipeline.StageForecast, Day: day, Trigger: "api"})
		if err != nil || !created || run.ID == 0 || run.Status != pipeline.RunRunning || run.Stage != pipeline.StageForecast ||
			run.Trigger != "api" || run.FinishedAt != nil {
			t.Fatalf("start = %+v, %v, %v", run, created, err)
		}
		<-g.entered // the stage is at work and holds at the gate
		if got := getRun(t, e.db, run.ID); got.Status != pipeline.RunRunning {
			t.Errorf("run while its stage works = %+v", got)
		}
		// The request is over; the run goes on.
		cancelReq()
		close(g.open)
		jobs.Wait(r)

		got := getRun(t, e.db, run.ID)
		if got.Status != pipeline.RunSucceeded || got.FinishedAt == nil || got.Error != "" {
			t.Fatalf("finished run = %+v", got)
		}
		snap, err := e.lake.Latest(context.Background(), pipeline.DatasetForecastMalo, day)
		if err != nil || snap.RunID != run.ID || snap.Rows != 10*96 {
			t.Errorf("published snapshot = %+v, %v", snap, err)
		}
	})
}

// TestStartRefusesBadRequests: nothing is recorded for a request that is
// not valid.
func TestStartRefusesBadRequests(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		r := e.runner()
		for _, c := range []struct {
			name string
			req  pipeline.StartRequest
		}{
			{"unknown stage", pipeline.StartRequest{Stage: "publish", Day: day}},
			{"no stage", pipeline.StartRequest{Day: day}},
			{"no day", pipeline.StartRequest{Stage: pipeline.StageForecast}},
			{"no day for the chain", pipeline.StartRequest{Stage: pipeline.StageChain}},
			{"a stage from a stage", pipeline.StartRequest{Stage: pipeline.StageForecast, FromStage: pipeline.StageAggregate, Day: day}},
			{"kalkulation from a stage", pipeline.StartRequest{Stage: pipeline.StageKalkulation, FromStage: pipeline.StageForecast, Day: day}},
			{"a chain from kalkulation", pipeline.StartRequest{Stage: pipeline.StageChain, FromStage: pipeline.StageKalkulation, Day: day}},
			{"a chain from the chain", pipeline.StartRequest{Stage: pipeline.StageChain, FromStage: pipeline.StageChain, Day: day}},
			{"a chain from an unknown stage", pipeline.StartRequest{Stage: pipeline.StageChain, FromStage: "publish", Day: day}},
		} {
			run, created, err := r.Start(ctx, c.req)
			if pipeline.KindOf(err) != pipeline.Invalid || created || run.ID != 0 {
				t.Errorf("%s: %+v, %v, %v; want invalid", c.name, run, created, err)
			}
		}
		if runs, err := e.db.Runs(ctx, pipeline.RunQuery{}); err != nil || len(runs) != 0 {
			t.Errorf("runs recorded for refused requests: %+v, %v", runs, err)
		}
	})
}

// TestStartIdempotent: starts with one key, at once and later, return the
// one run that the first created; only it executes.
func TestStartIdempotent(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		g := e.gateForecast(t)
		r := e.runner()
		req := pipeline.StartRequest{Stage: pipeline.StageChain, Day: day, Trigger: "api", IdempotencyKey: "client-1/key-1", RequestHash: "h1"}

		const callers = 6
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			ids     = map[int64]bool{}
			creates int
		)
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, created, err := r.Start(ctx, req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				ids[run.ID] = true
				if created {
					creates++
				}
			}()
		}
		wg.Wait()
		if len(ids) != 1 || creates != 1 {
			t.Fatalf("concurrent starts: runs %v, %d created; want one created once", ids, creates)
		}
		<-g.entered
		close(g.open)
		jobs.Wait(r)

		// A repeat after the run ended, with another hash, starts nothing
		// and tells the first request's hash.
		other := req
		other.RequestHash, other.Stage = "h2", pipeline.StageForecast
		again, created, err := r.Start(ctx, other)
		if err != nil || created || !ids[again.ID] || again.Status != pipeline.RunSucceeded || again.RequestHash != "h1" ||
			again.Stage != pipeline.StageChain {
			t.Errorf("later repeat = %+v, %v, %v", again, created, err)
		}
		jobs.Wait(r)
		chains, _ := e.db.Runs(ctx, pipeline.RunQuery{Stage: pipeline.StageChain})
		all, _ := e.db.Runs(ctx, pipeline.RunQuery{})
		if len(chains) != 1 || len(all) != 1+len(pipeline.Stages) {
			t.Errorf("%d chains and %d runs; want 1 chain of %d stages", len(chains), len(all), len(pipeline.Stages))
		}
		evs, _ := e.db.Events(ctx, pipeline.EventQuery{Kind: "run.started", Limit: 100})
		if len(evs) != 1+len(pipeline.Stages) {
			t.Errorf("run.started events = %d", len(evs))
		}
	})
}

// TestStartFromStage: a chain started at a stage runs that stage and the
// ones after it on what the earlier stages published before.
func TestStartFromStage(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner()
		forecast, err := r.RunStage(ctx, pipeline.StageForecast, day, "cli")
		if err != nil {
			t.Fatal(err)
		}
		chain, created, err := r.Start(ctx, pipeline.StartRequest{Stage: pipeline.StageChain, FromStage: pipeline.StageAggregate, Day: day, Trigger: "api"})
		if err != nil || !created || chain.FromStage != pipeline.StageAggregate {
			t.Fatalf("start = %+v, %v, %v", chain, created, err)
		}
		jobs.Wait(r)
		got := getRun(t, e.db, chain.ID)
		if got.Status != pipeline.RunSucceeded || got.FromStage != pipeline.StageAggregate {
			t.Fatalf("chain = %+v", got)
		}
		stages := chainStages(t, e.db, chain.ID)
		if want := pipeline.Stages[1:]; !slices.Equal(stagesOf(stages), want) {
			t.Errorf("chain ran %v, want %v", stagesOf(stages), want)
		}
		agg := outputs[jobs.AggregateOutputs](t, stages[0])
		if agg.Input.RunID != forecast.ID {
			t.Errorf("aggregate read forecast run %d, want %d", agg.Input.RunID, forecast.ID)
		}
		if fs, _ := e.db.Runs(ctx, pipeline.RunQuery{Stage: pipeline.StageForecast}); len(fs) != 1 {
			t.Errorf("forecast runs = %d, want the one before the chain", len(fs))
		}
	})
}

// TestRetry: a failed stage is run again; a failed chain, or a failed
// stage run of it, is resumed at the first stage that did not succeed in
// it; runs that are running or succeeded, and chains with nothing left to
// do, are refused as conflicts.
func TestRetry(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		hb := e.hooked()
		r := e.runner(func(c *jobs.Config) { c.Attempts = 2 })
		api := pipeline.StartRequest{Trigger: "api"}

		if _, _, err := r.Retry(ctx, 99999, api); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("retry of an unknown run: %v", err)
		}

		// A failed stage of its own: a new run of the stage and day.
		hb.Set(failAt(pipeline.DatasetForecastMalo))
		failed, err := r.RunStage(ctx, pipeline.StageForecast, day, "cron")
		if err == nil || failed.Status != pipeline.RunFailed {
			t.Fatalf("failing forecast = %+v, %v", failed, err)
		}
		hb.Set(nil)
		keyed := api
		keyed.IdempotencyKey, keyed.RequestHash = "k-forecast", "h"
		retry, created, err := r.Retry(ctx, failed.ID, keyed)
		if err != nil || !created || retry.Stage != pipeline.StageForecast || retry.Day != day || retry.RetryOf == nil ||
			*retry.RetryOf != failed.ID || retry.FromStage != "" || retry.Trigger != "api" || retry.ParentID != nil {
			t.Fatalf("retry = %+v, %v, %v", retry, created, err)
		}
		if again, created, err := r.Retry(ctx, failed.ID, keyed); err != nil || created || again.ID != retry.ID {
			t.Errorf("repeated retry = %+v, %v, %v", again, created, err)
		}
		jobs.Wait(r)
		if got := getRun(t, e.db, retry.ID); got.Status != pipeline.RunSucceeded {
			t.Fatalf("retried forecast = %+v", got)
		}
		if _, _, err := r.Retry(ctx, retry.ID, api); pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(err.Error(), "succeeded") {
			t.Errorf("retry of a succeeded run: %v", err)
		}

		// A chain whose aggregate failed once and then succeeded, and whose
		// open position failed for good.
		failedOnce := false
		hb.Set(func(ctx context.Context, p lake.Publication) error {
			if p.Dataset == pipeline.DatasetPositionControlArea && !failedOnce {
				failedOnce = true
				return errCrash
			}
			return failAt(pipeline.DatasetOpenPosition)(ctx, p)
		})
		chain, err := r.Orchestrate(ctx, day, "cron")
		if err == nil || chain.Status != pipeline.RunFailed {
			t.Fatalf("failing chain = %+v, %v", chain, err)
		}
		hb.Set(nil)
		first := chainStages(t, e.db, chain.ID)
		want := []pipeline.Stage{pipeline.StageForecast, pipeline.StageAggregate, pipeline.StageAggregate, pipeline.StageOpenPosition, pipeline.StageOpenPosition}
		if !slices.Equal(stagesOf(first), want) || first[1].Status != pipeline.RunFailed || first[2].Status != pipeline.RunSucceeded {
			t.Fatalf("first chain ran %v", stagesOf(first))
		}

		resumes := []struct {
			name string
			id   int64
		}{
			{"the chain", chain.ID},
			{"its failed open position", first[4].ID},
			// A later attempt of the aggregate succeeded within the chain,
			// so the chain resumes after it.
			{"its failed aggregate attempt", first[1].ID},
		}
		for _, c := range resumes {
			next, created, err := r.Retry(ctx, c.id, api)
			if err != nil || !created || next.Stage != pipeline.StageChain || next.FromStage != pipeline.StageOpenPosition ||
				next.RetryOf == nil || *next.RetryOf != c.id || next.Day != day {
				t.Fatalf("retry of %s = %+v, %v, %v", c.name, next, created, err)
			}
			jobs.Wait(r)
			got := getRun(t, e.db, next.ID)
			ran := chainStages(t, e.db, next.ID)
			if got.Status != pipeline.RunSucceeded || !slices.Equal(stagesOf(ran), []pipeline.Stage{pipeline.StageOpenPosition, pipeline.StageSchedules}) {
				t.Errorf("retry of %s: %s, ran %v", c.name, got.Status, stagesOf(ran))
			}
		}
		// The earlier stages did not run again.
		for st, n := range map[pipeline.Stage]int{pipeline.StageForecast: 3, pipeline.StageAggregate: 2} {
			if runs, _ := e.db.Runs(ctx, pipeline.RunQuery{Stage: st}); len(runs) != n {
				t.Errorf("%s runs = %d, want %d", st, len(runs), n)
			}
		}
		if _, _, err := r.Retry(ctx, first[2].ID, api); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("retry of a succeeded stage run of a failed chain: %v", err)
		}

		// Records left by others: a chain failed after all its stages had
		// succeeded, a run still running, a failed stage run of a running
		// chain.
		rec := func(parent *int64, st pipeline.Stage, status pipeline.RunStatus) pipeline.Run {
			t.Helper()
			run, err := e.db.CreateRun(ctx, pipeline.Run{ParentID: parent, Stage: st, Day: day, StartedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			if status != pipeline.RunRunning {
				if err := e.db.FinishRun(ctx, run.ID, status, "", nil, t0); err != nil {
					t.Fatal(err)
				}
			}
			return run
		}
		done := rec(nil, pipeline.StageChain, pipeline.RunRunning)
		for _, st := range pipeline.Stages {
			rec(&done.ID, st, pipeline.RunSucceeded)
		}
		if err := e.db.FinishRun(ctx, done.ID, pipeline.RunFailed, "the process ended", nil, t0); err != nil {
			t.Fatal(err)
		}
		running := rec(nil, pipeline.StageKalkulation, pipeline.RunRunning)
		busy := rec(nil, pipeline.StageChain, pipeline.RunRunning)
		busyStage := rec(&busy.ID, pipeline.StageForecast, pipeline.RunFailed)
		before, _ := e.db.Runs(ctx, pipeline.RunQuery{})
		for _, c := range []struct {
			name string
			id   int64
			msg  string
		}{
			{"a chain whose stages all succeeded", done.ID, "every stage of chain run"},
			{"a running run", running.ID, "still running"},
			{"a running chain", busy.ID, "still running"},
			{"a failed stage run of a running chain", busyStage.ID, "still running"},
		} {
			if _, _, err := r.Retry(ctx, c.id, api); pipeline.KindOf(err) != pipeline.Conflict || !strings.Contains(pipeline.MessageOf(err), c.msg) {
				t.Errorf("retry of %s: %v, want a conflict saying %q", c.name, err, c.msg)
			}
		}
		if after, _ := e.db.Runs(ctx, pipeline.RunQuery{}); len(after) != len(before) {
			t.Errorf("refused retries recorded %d runs", len(after)-len(before))
		}
	})
}

// logLines reads a run's log.
func logLines(t *testing.T, db *sqldb.DB, runID int64) []pipeline.RunLogLine {
	t.Helper()
	lines, err := db.RunLog(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if l.Seq != i+1 {
			t.Errorf("run %d: line %d has seq %d", runID, i, l.Seq)
		}
	}
	return lines
}

func messages(lines []pipeline.RunLogLine) []string {
	out := []string{}
	for _, l := range lines {
		out = append(out, l.Level+" "+l.Message)
	}
	return out
}

func attrsOf(t *testing.T, l pipeline.RunLogLine) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(l.Attrs, &m); err != nil {
		t.Fatalf("attrs of line %d: %v (%s)", l.Seq, err, l.Attrs)
	}
	return m
}

// captured is a slog handler that keeps what reaches it.
type captured struct {
	mu    sync.Mutex
	level slog.Level
	lines []string
}

func (c *captured) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, r.Level.String()+" "+r.Message)
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }

// TestRunLogLines: a stage run records its lines with their attributes,
// its error included; a chain records its own lines and its stage runs
// theirs; the configured logger still gets what its level lets through.
func TestRunLogLines(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		hb := e.hooked()
		logged := &captured{level: slog.LevelWarn}
		r := e.runner(func(c *jobs.Config) { c.Attempts = 2; c.Logger = slog.New(logged) })

		hb.Set(failAt(pipeline.DatasetForecastMalo))
		failed, err := r.RunStage(ctx, pipeline.StageForecast, day, "cli")
		if err == nil {
			t.Fatal("forecast did not fail")
		}
		lines := logLines(t, e.db, failed.ID)
		if got := messages(lines); !slices.Equal(got, []string{"INFO stage started", "ERROR stage finished"}) {
			t.Fatalf("failed run's log = %v", got)
		}
		start, end := attrsOf(t, lines[0]), attrsOf(t, lines[1])
		if start["stage"] != "forecast" || start["day"] != day.String() || start["run"] != float64(failed.ID) || start["attempt"] != float64(1) {
			t.Errorf("start attrs = %v", start)
		}
		if msg, _ := end["err"].(string); end["status"] != "failed" || !strings.Contains(msg, errCrash.Error()) || msg != failed.Error {
			t.Errorf("end attrs = %v, run error %q", end, failed.Error)
		}
		if lines[0].At.IsZero() || !lines[1].At.After(lines[0].At) {
			t.Errorf("times %s, %s", lines[0].At, lines[1].At)
		}

		// A chain whose open position fails on both attempts.
		hb.Set(failAt(pipeline.DatasetOpenPosition))
		chain, err := r.Orchestrate(ctx, day, "cli")
		if err == nil {
			t.Fatal("chain did not fail")
		}
		chainLines := logLines(t, e.db, chain.ID)
		want := []string{"INFO chain started", "INFO stage succeeded", "INFO stage succeeded", "WARN stage failed, retrying",
			"ERROR stage failed, the chain stops", "INFO chain finished"}
		if got := messages(chainLines); !slices.Equal(got, want) {
			t.Errorf("chain's log = %v\nwant %v", got, want)
		}
		if a := attrsOf(t, chainLines[4]); a["stage"] != string(pipeline.StageOpenPosition) || !strings.Contains(a["err"].(string), errCrash.Error()) {
			t.Errorf("chain's stop line attrs = %v", a)
		}
		for _, st := range chainStages(t, e.db, chain.ID) {
			got := messages(logLines(t, e.db, st.ID))
			want := []string{"INFO stage started", "INFO stage finished"}
			if st.Status == pipeline.RunFailed {
				want[1] = "ERROR stage finished"
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s run %d log = %v, want %v", st.Stage, st.ID, got, want)
			}
		}

		// The configured logger saw the warnings and errors only.
		logged.mu.Lock()
		defer logged.mu.Unlock()
		for _, l := range logged.lines {
			if strings.HasPrefix(l, "INFO") {
				t.Errorf("info line %q passed a warn-level logger", l)
			}
		}
		if !slices.Contains(logged.lines, "WARN stage failed, retrying") {
			t.Errorf("logger lines = %v", logged.lines)
		}
	})
}

// logFailingStore cannot record log lines.
type logFailingStore struct{ *sqldb.DB }

func (logFailingStore) AppendRunLog(context.Context, pipeline.RunLogLine) error {
	return pipeline.Errorf(pipeline.Unavailable, "the database is busy")
}

// TestRunLogFailureKeepsTheRun: a line that cannot be recorded is reported
// at debug level; the run goes on and succeeds.
func TestRunLogFailureKeepsTheRun(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		logged := &captured{level: slog.LevelDebug}
		r := jobs.New(logFailingStore{e.db}, e.lake, e.bucket, jobs.Config{Now: e.clock.Now, Alloc: e.alloc, Logger: slog.New(logged), Commit: e.committer()})
		run, err := r.RunStage(ctx, pipeline.StageForecast, day, "cli")
		if err != nil || run.Status != pipeline.RunSucceeded {
			t.Fatalf("run = %+v, %v", run, err)
		}
		if lines := logLines(t, e.db, run.ID); len(lines) != 0 {
			t.Errorf("lines recorded: %v", messages(lines))
		}
		logged.mu.Lock()
		defer logged.mu.Unlock()
		if n := strings.Count(strings.Join(logged.lines, "\n"), "DEBUG record run log line"); n != 2 {
			t.Errorf("debug reports = %d in %v, want 2", n, logged.lines)
		}
	})
}

// TestShutdown: Shutdown cancels the run at work and the one waiting for
// the runner; both end failed and say why, nothing is published, and no
// run starts after it.
func TestShutdown(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		g := e.gateForecast(t) // never opened
		r := e.runner()
		working, waiting := startBusy(t, r, g, pipeline.StageChain)
		if err := r.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		// The waiting run logs that it waits unless the shutdown was
		// before it looked at the lock.
		waited := []string{"INFO waiting for the runner's current run to end", "WARN run cancelled before it started"}
		for _, c := range []struct {
			name string
			id   int64
			says []string
			logs [][]string // one of them
		}{
			{"the run at work", working.ID, []string{"the runner shut down"}, [][]string{{"INFO stage started", "ERROR stage finished"}}},
			{"the waiting run", waiting.ID, []string{"not started", "the runner shut down"}, [][]string{waited, waited[1:]}},
		} {
			got := getRun(t, e.db, c.id)
			if got.Status != pipeline.RunFailed || got.FinishedAt == nil {
				t.Errorf("%s = %+v", c.name, got)
			}
			for _, s := range c.says {
				if !strings.Contains(got.Error, s) {
					t.Errorf("%s: error %q does not say %q", c.name, got.Error, s)
				}
			}
			lines := logLines(t, e.db, c.id)
			msgs := messages(lines)
			if !slices.ContainsFunc(c.logs, func(want []string) bool { return slices.Equal(msgs, want) }) ||
				!strings.Contains(string(lines[len(lines)-1].Attrs), "the runner shut down") {
				t.Errorf("%s: log %v, want one of %v ending with the cancellation", c.name, msgs, c.logs)
			}
		}
		if stages := chainStages(t, e.db, waiting.ID); len(stages) != 0 {
			t.Errorf("the waiting chain ran %v", stagesOf(stages))
		}
		if _, err := e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("latest forecast after shutdown: %v", err)
		}
		if _, _, err := r.Start(ctx, pipeline.StartRequest{Stage: pipeline.StageForecast, Day: day}); pipeline.KindOf(err) != pipeline.Unavailable {
			t.Errorf("start after shutdown: %v", err)
		}
		if _, _, err := r.Retry(ctx, working.ID, pipeline.StartRequest{}); pipeline.KindOf(err) != pipeline.Unavailable {
			t.Errorf("retry after shutdown: %v", err)
		}
		if runs, _ := e.db.Runs(ctx, pipeline.RunQuery{}); len(runs) != 2 {
			t.Errorf("runs = %d, want 2", len(runs))
		}
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("second shutdown: %v", err)
		}
	})
}
