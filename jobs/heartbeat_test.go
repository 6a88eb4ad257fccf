package jobs_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// ticks is a TickFunc that the test drives: each send on c is one tick of
// whichever ticker is running, and it is received only by a running one.
// A send returns once the ticker's goroutine has taken the tick, so that
// the next send returns only after the work of the tick before is done.
type ticks struct {
	c       chan time.Time
	mu      sync.Mutex
	periods []time.Duration
	running int
}

func newTicks() *ticks { return &ticks{c: make(chan time.Time)} }

func (k *ticks) fn(d time.Duration) (<-chan time.Time, func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.periods = append(k.periods, d)
	k.running++
	var once sync.Once
	return k.c, func() {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.running--
		})
	}
}

func (k *ticks) tick(t *testing.T) {
	t.Helper()
	select {
	case k.c <- time.Time{}:
	case <-time.After(5 * time.Second):
		t.Fatal("no ticker took the tick")
	}
}

func (k *ticks) active() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.running
}

// staleDead is the error of a run that the leader failed as stale.
const staleDead = "the process running it stopped: no heartbeat for more than 15s"

// TestRunHeartbeat: the runner refreshes the heartbeat of every run it has
// recorded and not finished, the one at work and the one waiting for it,
// on every tick of its own clock; the scheduler's leader, on another
// replica, fails only the run whose process is gone (no heartbeat for
// longer than StaleAfter), at its periodic check and not only when it
// became leader; once the runs are finished the heartbeat stops.
func TestRunHeartbeat(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		g := e.gateForecast(t)
		clk := clocktest.New(t0)
		beats := newTicks()
		r := e.runner(func(c *jobs.Config) { c.Now, c.Heartbeat, c.Tick = clk.Now, 5*time.Second, beats.fn })

		working, waiting := startBusy(t, r, g, pipeline.StageAggregate)
		// A command-line run whose process died at its start: nobody beats.
		dead, err := e.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageKalkulation, Day: day, Trigger: "cli", StartedAt: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}

		// The leader runs on another replica: a runner of its own, which
		// executes nothing (so its ticker drives only the stale check), on
		// the same database.
		checks := newTicks()
		other := jobs.New(e.db, nil, nil, jobs.Config{Now: clk.Now, Heartbeat: 5 * time.Second, Tick: checks.fn})
		off := map[pipeline.Stage]string{}
		for _, st := range pipeline.AllStages {
			off[st] = "-"
		}
		s, err := jobs.NewScheduler(other, &losingLeader{}, jobs.SchedulerConfig{Specs: off, StaleAfter: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		if err := s.Register(reg); err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(sctx) }()
		waitFor(t, func() bool { return testutil.ToFloat64(s.LeaderGauge()) == 1 && checks.active() == 1 })
		checks.mu.Lock()
		if p := checks.periods; len(p) != 1 || p[0] != 5*time.Second {
			t.Errorf("stale checks tick every %v, want the heartbeat's 5s", p)
		}
		checks.mu.Unlock()

		beatAt := func(id int64, at time.Time) bool {
			got := getRun(t, e.db, id)
			return got.HeartbeatAt != nil && got.HeartbeatAt.Equal(at)
		}
		// Four beats and checks, 5 s apart: the dead run's start is 20 s
		// old by the last, more than the 15 s threshold.
		for i := 1; i <= 4; i++ {
			clk.Add(5 * time.Second)
			beats.tick(t)
			now := clk.Now()
			waitFor(t, func() bool { return beatAt(working.ID, now) && beatAt(waiting.ID, now) })
			checks.tick(t)
			checks.tick(t) // taken only once the check before has ended
			wantDead := pipeline.RunRunning
			if i == 4 {
				wantDead = pipeline.RunFailed
			}
			if got := getRun(t, e.db, dead.ID); got.Status != wantDead {
				t.Fatalf("after %d beats: the dead process's run is %s, want %s", i, got.Status, wantDead)
			}
			for _, id := range []int64{working.ID, waiting.ID} {
				if got := getRun(t, e.db, id); got.Status != pipeline.RunRunning {
					t.Fatalf("after %d beats: live run %d = %+v", i, id, got)
				}
			}
		}
		if got := getRun(t, e.db, dead.ID); got.Error != staleDead || got.FinishedAt == nil || !got.FinishedAt.Equal(clk.Now()) {
			t.Errorf("dead run = %+v", got)
		}
		if beats.active() != 1 {
			t.Errorf("%d heartbeat tickers running, want one for both runs", beats.active())
		}

		close(g.open)
		jobs.Wait(r)
		for _, id := range []int64{working.ID, waiting.ID} {
			if got := getRun(t, e.db, id); got.Status != pipeline.RunSucceeded {
				t.Errorf("run %d = %+v, want succeeded", id, got)
			}
		}
		waitFor(t, func() bool { return beats.active() == 0 })

		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if v := testutil.ToFloat64(s.LeaderGauge()); v != 0 {
			t.Errorf("leader gauge after stepping down = %v", v)
		}
		if checks.active() != 0 {
			t.Error("the stale check still ticks after the leadership ended")
		}
	})
}

// TestRunHeartbeatStalled: a process that stalls for longer than the
// threshold (its heartbeats stop) has its run failed by the leader; when it
// wakes up, its heartbeat learns that the record is no longer running and
// says so in the process log, and finishing the run does not overwrite the
// failure.
func TestRunHeartbeatStalled(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	g := e.gateForecast(t)
	clk := clocktest.New(t0)
	beats := newTicks()
	logs := &captured{level: slog.LevelWarn}
	r := e.runner(func(c *jobs.Config) {
		c.Now, c.Heartbeat, c.Tick, c.Logger = clk.Now, 5*time.Second, beats.fn, slog.New(logs)
	})
	run, _, err := r.Start(ctx, pipeline.StartRequest{Stage: pipeline.StageForecast, Day: day, Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	clk.Add(time.Minute)
	failed, err := e.db.FailStaleRuns(ctx, clk.Now(), 15*time.Second, staleDead)
	if err != nil || !slices.Equal(failed, []int64{run.ID}) {
		t.Fatalf("fail stale = %v, %v", failed, err)
	}
	beats.tick(t)
	waitFor(t, func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return slices.ContainsFunc(logs.lines, func(l string) bool { return strings.HasPrefix(l, "WARN the run's record is no longer running") })
	})
	close(g.open)
	jobs.Wait(r)
	if got := getRun(t, e.db, run.ID); got.Status != pipeline.RunFailed || got.Error != staleDead {
		t.Errorf("run after the stalled process finished = %+v", got)
	}
	// The run that the leader failed has published nothing: its commit
	// rolled back with the refused success.
	if snap, err := e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day); pipeline.KindOf(err) != pipeline.NotFound {
		t.Errorf("the failed run's snapshot: %+v, %v", snap, err)
	}
	waitFor(t, func() bool { return beats.active() == 0 })
}

// heldBeats is a store whose heartbeat writes wait, once they have begun,
// until release is closed.
type heldBeats struct {
	jobs.Store
	entered chan struct{}
	release chan struct{}
}

func (h *heldBeats) HeartbeatRuns(ctx context.Context, ids []int64, now time.Time) ([]int64, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.Store.HeartbeatRuns(ctx, ids, now)
}

// TestRunHeartbeatFinishedMeanwhile: a run that finishes while a heartbeat
// for it is being written is not taken for one that the leader failed: the
// process log stays quiet.
func TestRunHeartbeatFinishedMeanwhile(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	g := e.gateForecast(t)
	beats := newTicks()
	logs := &captured{level: slog.LevelWarn}
	store := &heldBeats{Store: e.db, entered: make(chan struct{}, 1), release: make(chan struct{})}
	r := jobs.New(store, e.lake, e.bucket, jobs.Config{Now: e.clock.Now, Alloc: e.alloc, Tick: beats.fn, Logger: slog.New(logs), Commit: e.committer()})
	run, _, err := r.Start(ctx, pipeline.StartRequest{Stage: pipeline.StageForecast, Day: day, Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	beats.tick(t)
	<-store.entered // the heartbeat of the live run is on its way
	close(g.open)
	jobs.Wait(r)
	close(store.release)
	waitFor(t, func() bool { return beats.active() == 0 })
	if got := getRun(t, e.db, run.ID); got.Status != pipeline.RunSucceeded {
		t.Errorf("run = %+v", got)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.lines) != 0 {
		t.Errorf("warnings for a run that finished: %v", logs.lines)
	}
}

// TestStaleAfterLongerThanHeartbeat: a threshold that a live run's
// heartbeat cannot keep up with is refused.
func TestStaleAfterLongerThanHeartbeat(t *testing.T) {
	r := jobs.New(sqltest.Open(t, sqldb.SQLite), nil, nil, jobs.Config{Heartbeat: 10 * time.Second})
	for _, c := range []struct {
		stale time.Duration
		ok    bool
	}{{5 * time.Second, false}, {10 * time.Second, false}, {11 * time.Second, true}, {0, true}} {
		_, err := jobs.NewScheduler(r, &losingLeader{}, jobs.SchedulerConfig{StaleAfter: c.stale})
		if c.ok != (err == nil) || (!c.ok && pipeline.KindOf(err) != pipeline.Invalid) {
			t.Errorf("stale after %s: %v", c.stale, err)
		}
	}
}

// TestSecondsInSpecs: a stage's cron spec may have a leading seconds field,
// so that a test fires a stage every few seconds; its slots are aligned to
// the minute like any cron slot.
func TestSecondsInSpecs(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 0, 1, 0, pipeline.Berlin)
	for _, c := range []struct {
		spec string
		next time.Time
	}{
		{"*/3 * * * * *", at.Add(2 * time.Second)},
		{"30 * * * *", at.Add(30*time.Minute - time.Second)},
		{"@hourly", at.Add(time.Hour - time.Second)},
	} {
		specs, err := jobs.ParseSpecs(map[pipeline.Stage]string{pipeline.StageForecast: c.spec})
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if got := specs[pipeline.StageForecast].Next(at); !got.Equal(c.next) {
			t.Errorf("%s: next after %s = %s, want %s", c.spec, at, got, c.next)
		}
	}
	if _, err := jobs.ParseSpecs(map[pipeline.Stage]string{pipeline.StageForecast: "61 * * * * *"}); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("bad seconds accepted: %v", err)
	}
}

// onlyForecast switches every cron off but the forecast's at spec.
func onlyForecast(spec string) map[pipeline.Stage]string {
	specs := map[pipeline.Stage]string{}
	for _, st := range pipeline.AllStages {
		specs[st] = "-"
	}
	specs[pipeline.StageForecast] = spec
	return specs
}

// TestCronSlotOnce: a slot of a stage runs once, whichever process fires
// it: the second firing of the same slot is refused and records nothing,
// and no retry follows the refusal; the next slot runs.
func TestCronSlotOnce(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	e.seed(t, "p1", 10)
	slot := time.Date(2026, 11, 23, 9, 0, 0, 0, pipeline.Berlin)
	var scheds []*jobs.Scheduler
	for range 2 { // two replicas on one database
		s, err := jobs.NewScheduler(e.runner(), &losingLeader{}, jobs.SchedulerConfig{Specs: onlyForecast("0 9 * * *")})
		if err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	first, err := scheds[0].FireSlot(ctx, pipeline.StageForecast, slot)
	if err != nil || first.CronSlot == nil || !first.CronSlot.Equal(slot) || first.Day != day || first.Trigger != "cron" {
		t.Fatalf("first firing = %+v, %v", first, err)
	}
	again, err := scheds[1].FireSlot(ctx, pipeline.StageForecast, slot)
	if pipeline.KindOf(err) != pipeline.Conflict || again.ID != 0 {
		t.Errorf("the same slot on the other replica = %+v, %v; want a conflict and no run", again, err)
	}
	next, err := scheds[1].FireSlot(ctx, pipeline.StageForecast, slot.Add(24*time.Hour))
	if err != nil || next.Day != day.AddDays(1) {
		t.Errorf("the next slot = %+v, %v", next, err)
	}
	runs, _ := e.db.Runs(ctx, pipeline.RunQuery{Trigger: "cron"})
	if len(runs) != 2 || len(e.sleeps) != 0 {
		t.Errorf("runs %d, retry waits %v; want 2 runs and no retry", len(runs), e.sleeps)
	}
}

// TestMissedSlots: a new leader fires late the latest slot of a stage that
// fell due while it was already competing for the leadership and at most
// CatchUp ago, unless a run of that slot (or a later one) exists.
func TestMissedSlots(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 23, h, m, s, 0, pipeline.Berlin) }
	s, err := jobs.NewScheduler(e.runner(), &losingLeader{}, jobs.SchedulerConfig{Specs: onlyForecast("0 9 * * *"), CatchUp: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	recordSlot := func(slot time.Time) {
		t.Helper()
		if _, err := e.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: day, Trigger: "cron",
			StartedAt: slot.Add(time.Second), CronSlot: &slot}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		ran        *time.Time // a cron run of this slot exists
		since, now time.Time
		missed     bool
	}{
		{"the leader died just before the slot", nil, at(8, 0, 0), at(9, 0, 20), true},
		{"not running at the slot", nil, at(9, 0, 10), at(9, 0, 20), false},
		{"the slot is older than CatchUp", nil, at(8, 0, 0), at(10, 0, 1), false},
		{"before the slot", nil, at(8, 0, 0), at(8, 59, 59), false},
		{"yesterday's slot ran", ptr(at(9, 0, 0).AddDate(0, 0, -1)), at(8, 0, 0), at(9, 0, 20), true},
		{"the slot ran", ptr(at(9, 0, 0)), at(8, 0, 0), at(9, 0, 20), false},
	} {
		if c.ran != nil {
			recordSlot(*c.ran)
		}
		got := s.MissedSlots(ctx, c.since, c.now)
		if slot, ok := got[pipeline.StageForecast]; ok != c.missed || (ok && !slot.Equal(at(9, 0, 0))) || len(got) > 1 {
			t.Errorf("%s: missed %v, want the 09:00 slot %v", c.name, got, c.missed)
		}
	}
}

// gateLeader refuses the leadership until open is closed, and closes asked
// when it is first asked, that is when the scheduler has begun to compete.
type gateLeader struct {
	open  chan struct{}
	asked chan struct{}
	first sync.Once
	inner losingLeader
}

func (g *gateLeader) TryLeader(ctx context.Context, name string) (context.Context, func(), bool, error) {
	g.first.Do(func() { close(g.asked) })
	select {
	case <-g.open:
		return g.inner.TryLeader(ctx, name)
	default:
		return ctx, func() {}, false, nil
	}
}

// TestTakeoverFiresMissedSlot: a follower that becomes leader just after a
// slot that its dead predecessor did not fire fires it, once, for the
// delivery day of the slot.
func TestTakeoverFiresMissedSlot(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	e.seed(t, "p1", 10)
	clk := clocktest.New(time.Date(2026, 11, 23, 8, 59, 50, 0, pipeline.Berlin))
	r := e.runner(func(c *jobs.Config) { c.Now = clk.Now })
	g := &gateLeader{open: make(chan struct{}), asked: make(chan struct{})}
	s, err := jobs.NewScheduler(r, g, jobs.SchedulerConfig{Specs: onlyForecast("0 9 * * *"), LeaderPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	<-g.asked // the follower competes from 08:59:50
	clk.Set(time.Date(2026, 11, 23, 9, 0, 20, 0, pipeline.Berlin))
	close(g.open)
	var runs []pipeline.Run
	waitFor(t, func() bool {
		runs, _ = e.db.Runs(ctx, pipeline.RunQuery{Trigger: "cron", Status: pipeline.RunSucceeded})
		return len(runs) == 1
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 23, 9, 0, 0, 0, pipeline.Berlin)
	if got := runs[0]; got.Stage != pipeline.StageForecast || got.Day != day || got.CronSlot == nil || !got.CronSlot.Equal(want) {
		t.Errorf("caught-up run = %+v", got)
	}
	if all, _ := e.db.Runs(ctx, pipeline.RunQuery{}); len(all) != 1 {
		t.Errorf("%d runs, want the caught-up one", len(all))
	}
}

func ptr[T any](v T) *T { return &v }
