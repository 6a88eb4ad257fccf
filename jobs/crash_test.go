package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// envCrash carries a crashSpec to a child process of the test binary that
// runs TestCrashChild.
const envCrash = "SCHEDBRIDGE_TEST_CRASH"

// crashSpec tells the child which env to open, which stage to run and at
// which commit boundary (jobs.Fault*) to end itself with SIGKILL.
type crashSpec struct {
	Env   envSpec        `json:"env"`
	Stage pipeline.Stage `json:"stage"`
	Point string         `json:"point"`
	Now   time.Time      `json:"now"`
}

// TestCrashChild is the child process of TestCrashAtCommitBoundaries: it
// runs one stage and, at the fault point, ends the process the way kill -9
// does, with whatever is in flight (a transaction, an upload) left as it is.
// Run on its own, it has nothing to do.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(envCrash)
	if raw == "" {
		t.Skip("the child process of TestCrashAtCommitBoundaries")
	}
	var spec crashSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	e := openEnv(t, spec.Env)
	e.clock.t = spec.Now
	r := e.runner(func(c *jobs.Config) {
		c.Attempts = 1
		c.Fault = func(point string) {
			if point == spec.Point {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal ends the process
			}
		}
	})
	run, err := r.RunStage(context.Background(), spec.Stage, day, "crash-test")
	t.Fatalf("the %s stage got past the fault point %s: run %d %s, %v", spec.Stage, spec.Point, run.ID, run.Status, err)
}

// crashAt runs the stage in a child process that kills itself at the fault
// point, and returns the run it recorded.
func crashAt(t *testing.T, e *env, spec crashSpec) pipeline.Run {
	t.Helper()
	raw, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrash+"="+string(raw))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() ||
		exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child crashing %s at %s: %v\n%s", spec.Stage, spec.Point, err, out)
	}
	runs, err := e.db.Runs(context.Background(), pipeline.RunQuery{Stage: spec.Stage, Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].Trigger != "crash-test" {
		t.Fatalf("the crashed run: %+v, %v", runs, err)
	}
	return runs[0]
}

// stageDataset is the lake dataset and the read model (none: "") of each
// stage.
var stageDataset = map[pipeline.Stage][2]string{
	pipeline.StageForecast:     {pipeline.DatasetForecastMalo, ""},
	pipeline.StageAggregate:    {pipeline.DatasetPositionControlArea, "positions"},
	pipeline.StageOpenPosition: {pipeline.DatasetOpenPosition, "open-position"},
	pipeline.StageSchedules:    {pipeline.DatasetSchedule, ""},
	pipeline.StageKalkulation:  {pipeline.DatasetKalkulation, "kalkulation"},
}

// nextStage is the stage that reads a stage's dataset from the lake.
var nextStage = map[pipeline.Stage]pipeline.Stage{
	pipeline.StageForecast:     pipeline.StageAggregate,
	pipeline.StageAggregate:    pipeline.StageOpenPosition,
	pipeline.StageOpenPosition: pipeline.StageSchedules,
}

// agree checks that the lake, the read model and the run records all have
// run want as the stage's current run for the day.
func agree(t *testing.T, e *env, st pipeline.Stage, want int64) {
	t.Helper()
	ctx := context.Background()
	ds := stageDataset[st]
	snap, err := e.lake.Latest(ctx, ds[0], day)
	if err != nil || snap.RunID != want {
		t.Errorf("%s: the lake's current run is %d (%v), want %d", st, snap.RunID, err, want)
	}
	if ds[1] != "" {
		var got int64
		q := "SELECT run_id FROM read_models WHERE dataset = ? AND delivery_day = ?"
		if e.db.Dialect() == sqldb.Postgres {
			q = "SELECT run_id FROM read_models WHERE dataset = $1 AND delivery_day = $2"
		}
		err := e.db.SQL().QueryRowContext(ctx, q, ds[1], day.String()).Scan(&got)
		if err != nil || got != want {
			t.Errorf("%s: the read model serves run %d (%v), want %d", st, got, err, want)
		}
	}
	runs, err := e.db.Runs(ctx, pipeline.RunQuery{Stage: st, Day: &day, Status: pipeline.RunSucceeded, Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].ID != want {
		t.Errorf("%s: the newest succeeded run is %+v (%v), want %d", st, runs, err, want)
	}
	if running, _ := e.db.Runs(ctx, pipeline.RunQuery{Status: pipeline.RunRunning}); len(running) > 0 {
		t.Errorf("runs still running after recovery: %+v", running)
	}
}

// schedulesAgree checks the schedule versions against the outbox: gapless
// versions, each of a run that succeeded and delivered, and no file in the
// outbox that no version names.
func schedulesAgree(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	ms, err := e.db.Schedules(ctx, "", day)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	keys := map[string]bool{}
	slices.SortFunc(ms, func(a, b pipeline.ScheduleMessage) int { return a.Version - b.Version })
	for _, m := range ms {
		k := m.PortfolioID + "/" + string(m.ControlArea)
		if next[k]++; m.Version != next[k] {
			t.Errorf("schedule %s: version %d follows %d", k, m.Version, next[k]-1)
		}
		if run := getRun(t, e.db, m.RunID); run.Status != pipeline.RunSucceeded {
			t.Errorf("schedule %s v%d belongs to run %d, which is %s", k, m.Version, m.RunID, run.Status)
		}
		keys[m.ObjectKey] = true
	}
	if waiting, err := e.db.UndeliveredSchedules(ctx, 10); err != nil || len(waiting) > 0 {
		t.Errorf("versions not delivered after recovery: %+v, %v", waiting, err)
	}
	objs, err := e.bucket.List(ctx, jobs.OutboxPrefix, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, o := range objs {
		files = append(files, o.Key)
		if !keys[o.Key] {
			t.Errorf("the outbox has %s, which no committed version names", o.Key)
		}
	}
	if len(files) != len(keys) {
		t.Errorf("%d versions, %d files in the outbox: %v", len(keys), len(files), files)
	}
}

// TestCrashAtCommitBoundaries kills the process at every commit boundary
// of every stage (after the files, after the catalog's swap, after the read
// model, after the commit) and checks, once the leader's recovery has run,
// that the lake, the read model and the run records agree on one run: the
// previous one when the process died before the commit, the crashed one
// after it. The next stage reads that run, and a re-run succeeds.
func TestCrashAtCommitBoundaries(t *testing.T) {
	for _, c := range combos {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			spec := newEnvSpec(t, c)
			e := openEnv(t, spec)
			e.seed(t, "p1", 20)
			r := e.runner(func(c *jobs.Config) { c.Attempts = 1 })
			lateClock := &clock{t: day.AddDays(2).Start().Add(7 * time.Hour)}
			late := e.runner(func(c *jobs.Config) { c.Attempts, c.Now = 1, lateClock.Now })
			if _, err := r.Orchestrate(ctx, day, "test"); err != nil {
				t.Fatal(err)
			}
			if _, err := late.RunStage(ctx, pipeline.StageKalkulation, day, "test"); err != nil {
				t.Fatal(err)
			}
			trades := 0
			for _, st := range []pipeline.Stage{pipeline.StageForecast, pipeline.StageAggregate, pipeline.StageOpenPosition,
				pipeline.StageSchedules, pipeline.StageKalkulation} {
				runner, now := r, e.clock.Now
				if st == pipeline.StageKalkulation {
					runner, now = late, lateClock.Now
				}
				for _, point := range []string{jobs.FaultFiles, jobs.FaultCatalog, jobs.FaultReadModel, jobs.FaultCommitted} {
					t.Logf("%s at %s", st, point)
					if st == pipeline.StageSchedules {
						// New trades change the schedule, so that the run
						// records new versions to send.
						trades++
						e.trade(t, float64(trades))
						if _, err := r.RunStage(ctx, pipeline.StageOpenPosition, day, "test"); err != nil {
							t.Fatal(err)
						}
					}
					before, err := e.lake.Latest(ctx, stageDataset[st][0], day)
					if err != nil {
						t.Fatal(err)
					}
					crashed := crashAt(t, e, crashSpec{Env: spec, Stage: st, Point: point, Now: now().Add(time.Minute)})
					if st == pipeline.StageSchedules && point == jobs.FaultCommitted {
						// Committed, not yet delivered: the files are missing
						// until recovery.
						waiting, err := e.db.UndeliveredSchedules(ctx, 10)
						if err != nil || len(waiting) == 0 {
							t.Fatalf("undelivered versions after a crash past the commit: %v, %v", waiting, err)
						}
						for _, m := range waiting {
							if _, err := e.bucket.Stat(ctx, m.ObjectKey); pipeline.KindOf(err) != pipeline.NotFound {
								t.Errorf("%s is in the outbox before recovery: %v", m.ObjectKey, err)
							}
						}
					}

					// The leader's recovery: stale runs fail, committed
					// schedules are delivered.
					if _, err := e.db.FailStaleRuns(ctx, now().Add(time.Hour), time.Minute, "test: the process died"); err != nil {
						t.Fatal(err)
					}
					if _, err := r.DeliverSchedules(ctx); err != nil {
						t.Fatal(err)
					}
					want, status := before.RunID, pipeline.RunFailed
					if point == jobs.FaultCommitted {
						want, status = crashed.ID, pipeline.RunSucceeded
					}
					if got := getRun(t, e.db, crashed.ID); got.Status != status {
						t.Errorf("the run crashed at %s is %s (%s), want %s", point, got.Status, got.Error, status)
					}
					agree(t, e, st, want)
					schedulesAgree(t, e)

					if next, ok := nextStage[st]; ok {
						run, err := r.RunStage(ctx, next, day, "test")
						if err != nil {
							t.Fatalf("%s after %s crashed at %s: %v", next, st, point, err)
						}
						var out struct {
							Input struct {
								RunID int64 `json:"run_id"`
							} `json:"input"`
						}
						if err := json.Unmarshal(run.Outputs, &out); err != nil || out.Input.RunID != want {
							t.Errorf("%s read run %d of %s (%v), want the current %d", next, out.Input.RunID, st, err, want)
						}
					}
					rerun, err := runner.RunStage(ctx, st, day, "test")
					if err != nil {
						t.Fatalf("re-run of %s after a crash at %s: %v", st, point, err)
					}
					agree(t, e, st, rerun.ID)
					schedulesAgree(t, e)
				}
			}
		})
	}
}

// trade stages a trade set of p1 whose buy is v MW in every quarter-hour.
func (e *env) trade(t *testing.T, v float64) {
	t.Helper()
	buy := make([]float64, day.Intervals())
	for i := range buy {
		buy[i] = v
	}
	set := pipeline.TradeSet{Portfolio: "p1", Day: day, Trades: []pipeline.Trade{
		{ControlArea: pipeline.TenneT, Counterparty: cpty, Direction: pipeline.Buy, Unit: pipeline.MW, Values: buy}}}
	canon, _ := json.Marshal(set)
	a := &pipeline.AuditEntry{ReceivedAt: t0, PortfolioID: "p1", Endpoint: "test", InputHash: fmt.Sprint("t", v), StatusCode: 200}
	if _, err := e.db.StageTrades(context.Background(), a, set, canon); err != nil {
		t.Fatal(err)
	}
}

// TestStageReadsSucceededInputOnly: a current snapshot whose run did not
// succeed (an older version of the service published before a kill, and
// the leader failed the run afterwards) is no input for the next stage,
// which says to run the stage again.
func TestStageReadsSucceededInputOnly(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner(func(c *jobs.Config) { c.Attempts = 1 })
		if _, err := r.RunStage(ctx, pipeline.StageForecast, day, "test"); err != nil {
			t.Fatal(err)
		}
		killed, err := e.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: day, Status: pipeline.RunRunning,
			Trigger: "test", Attempt: 1, StartedAt: e.clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day)
		if err != nil {
			t.Fatal(err)
		}
		var rows []arrow.RecordBatch
		if err := e.lake.Read(ctx, snap, nil, func(rec arrow.RecordBatch) error { rec.Retain(); rows = append(rows, rec); return nil }); err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, rec := range rows {
				rec.Release()
			}
		}()
		if _, err := lake.WriteAll(ctx, e.lake, pipeline.DatasetForecastMalo, day, killed.ID, pipeline.ForecastMaloSchema, rows...); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.FailStaleRuns(ctx, e.clock.Now().Add(time.Hour), time.Minute, "test: the process died"); err != nil {
			t.Fatal(err)
		}
		run, err := r.RunStage(ctx, pipeline.StageAggregate, day, "test")
		if pipeline.KindOf(err) != pipeline.NotFound || !strings.Contains(err.Error(), fmt.Sprintf("is of run %d, which is failed", killed.ID)) {
			t.Fatalf("aggregate over a failed run's snapshot: %+v, %v", run, err)
		}
		if _, err := r.RunStage(ctx, pipeline.StageForecast, day, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunStage(ctx, pipeline.StageAggregate, day, "test"); err != nil {
			t.Fatal(err)
		}
	})
}
