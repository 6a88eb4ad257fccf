package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake"
)

// Leader elects the one process that runs the scheduler (storage/sqldb:
// a PostgreSQL advisory lock, or a file lock beside a SQLite database).
// held ends when the leadership does, including when the lock is lost.
type Leader interface {
	TryLeader(ctx context.Context, name string) (held context.Context, release func(), ok bool, err error)
}

// DefaultSpecs are the cron times of the stages for the next delivery day,
// in Europe/Berlin time. They leave four hours and all retries before the
// TSO deadline of 14:30 for the schedules, and half an hour between stages
// for a stage's own retries (30 s, 60 s) and for operators to react.
var DefaultSpecs = map[pipeline.Stage]string{
	pipeline.StageForecast:     "0 9 * * *",
	pipeline.StageAggregate:    "30 9 * * *",
	pipeline.StageOpenPosition: "0 10 * * *",
	pipeline.StageSchedules:    "30 10 * * *",
	// The period calculation of the past days runs in the morning, when
	// the DSOs' metered data of the day before have usually arrived.
	pipeline.StageKalkulation: "0 7 * * *",
}

// cronStages are the stages the scheduler fires: the chain for the next
// delivery day and the kalkulation for past days.
var cronStages = pipeline.AllStages

// Sweeper expires the lake's old table snapshots and removes the objects
// that no remaining snapshot references (storage/lake).
type Sweeper interface {
	Sweep(ctx context.Context, olderThan time.Duration) (lake.Swept, error)
}

// SchedulerConfig tunes the scheduler.
type SchedulerConfig struct {
	// Sweeper, when set, is run daily at SweepSpec (default 03:15) and
	// expires snapshots older than SweepAge (DefaultSweepAge, so analysts
	// can still compare recent runs), removing what only they referenced.
	Sweeper   Sweeper
	SweepSpec string
	SweepAge  time.Duration
	// Specs overrides DefaultSpecs per stage (standard 5-field cron
	// expressions in Europe/Berlin time, with an optional leading seconds
	// field); "-" switches a stage's cron off.
	Specs map[pipeline.Stage]string
	// KalkulationDays is how many past days the kalkulation cron
	// calculates again each morning, yesterday included (default 3), so
	// that metered data arriving a day or two late are taken in.
	KalkulationDays int
	// LeaderPoll is how often a follower tries to become leader (default
	// DefaultLeaderPoll). It bounds the takeover after a leader's process
	// died: its lock goes with its database session, and a follower takes
	// it at its next try.
	LeaderPoll time.Duration
	// StaleAfter is how old the heartbeat of a running run may get before
	// the leader fails the run as abandoned by its process (default
	// DefaultStaleAfter). It must be longer than the runner's Heartbeat on
	// every process that executes runs on this database.
	StaleAfter time.Duration
	// CatchUp bounds how late a leader fires a slot that fell due while no
	// process led (default DefaultCatchUp): when it becomes leader, it
	// fires the latest slot of each stage that has no run yet, if that slot
	// is at most CatchUp old and fell due after this process began to
	// compete for the leadership (a process that was not running then
	// leaves it to the operator).
	CatchUp time.Duration
	Now     func() time.Time
	Logger  *slog.Logger
}

// DefaultLeaderPoll is how often a follower tries to become the leader, and
// DefaultCatchUp how late a new leader still fires a slot that fell due
// during the takeover.
const (
	DefaultLeaderPoll = 15 * time.Second
	DefaultCatchUp    = time.Hour
)

// DefaultSweepAge is how long the lake keeps a replaced snapshot by default:
// a week, so that analysts can compare the runs of recent days.
const DefaultSweepAge = 7 * 24 * time.Hour

// Scheduler fires the stages on cron for the next delivery day.
type Scheduler struct {
	runner *Runner
	leader Leader
	cfg    SchedulerConfig
	specs  map[pipeline.Stage]cron.Schedule
	log    *slog.Logger
	// leading is 1 while this process is the leader, for operators to see
	// which replica runs the scheduler.
	leading prometheus.Gauge
}

// cronParser reads the standard 5-field cron expressions, descriptors such
// as @hourly, and an optional leading seconds field ("*/5 * * * * *"), which
// lets a test or a staging system fire a cheap stage every few seconds.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpecs checks the stage cron expressions and fills in the defaults.
func ParseSpecs(overrides map[pipeline.Stage]string) (map[pipeline.Stage]cron.Schedule, error) {
	out := map[pipeline.Stage]cron.Schedule{}
	for _, st := range cronStages {
		spec := DefaultSpecs[st]
		if o, ok := overrides[st]; ok && o != "" {
			spec = o
		}
		if spec == "-" {
			continue
		}
		s, err := cronParser.Parse(spec)
		if err != nil {
			return nil, pipeline.Errorf(pipeline.Invalid, "cron spec of stage %s %q: %v", st, spec, err)
		}
		out[st] = s
	}
	for st := range overrides {
		if _, err := pipeline.ParseStage(string(st)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NewScheduler checks the configuration and returns a scheduler.
func NewScheduler(r *Runner, leader Leader, cfg SchedulerConfig) (*Scheduler, error) {
	specs, err := ParseSpecs(cfg.Specs)
	if err != nil {
		return nil, err
	}
	if cfg.SweepSpec == "" {
		cfg.SweepSpec = "15 3 * * *"
	}
	if cfg.SweepAge <= 0 {
		cfg.SweepAge = DefaultSweepAge
	}
	if _, err := cronParser.Parse(cfg.SweepSpec); err != nil {
		return nil, pipeline.Errorf(pipeline.Invalid, "cron spec of the lake sweep %q: %v", cfg.SweepSpec, err)
	}
	if cfg.KalkulationDays <= 0 {
		cfg.KalkulationDays = 3
	}
	if cfg.LeaderPoll <= 0 {
		cfg.LeaderPoll = DefaultLeaderPoll
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.StaleAfter <= r.cfg.Heartbeat {
		return nil, pipeline.Errorf(pipeline.Invalid, "the staleness threshold of runs (%s) must be longer than their heartbeat (%s), "+
			"or the leader fails runs that are alive", cfg.StaleAfter, r.cfg.Heartbeat)
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = DefaultCatchUp
	}
	if cfg.Now == nil {
		cfg.Now = r.cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = r.log
	}
	leading := prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedbridge_scheduler_leader",
		Help: "1 while this process is the scheduler's leader (fires the cron stages and fails stale runs), else 0."})
	return &Scheduler{runner: r, leader: leader, cfg: cfg, specs: specs, log: cfg.Logger, leading: leading}, nil
}

// Register adds the scheduler's leader gauge to reg.
func (s *Scheduler) Register(reg prometheus.Registerer) error {
	return reg.Register(s.leading)
}

// NextRuns tells when each stage fires next after t, for logs and the docs.
func (s *Scheduler) NextRuns(t time.Time) map[pipeline.Stage]time.Time {
	out := map[pipeline.Stage]time.Time{}
	for st, sc := range s.specs {
		out[st] = sc.Next(t.In(pipeline.Berlin))
	}
	return out
}

// Run waits to become leader, then fires the stages on cron until ctx ends.
// Only the leader fires; the others keep polling, so when the leader's
// process dies (and with it its lock), another takes over. A leader that
// loses its lock (its database connection broke) stops firing at once and
// polls again like any follower.
func (s *Scheduler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.LeaderPoll)
	defer t.Stop()
	since := s.cfg.Now()
	for {
		held, release, ok, err := s.leader.TryLeader(ctx, "scheduler")
		if err != nil {
			s.log.WarnContext(ctx, "scheduler leader election", "err", err)
		}
		if ok {
			err := s.lead(held, since)
			release()
			if err != nil || ctx.Err() != nil {
				return err
			}
			s.log.WarnContext(ctx, "scheduler lost its leadership", "cause", context.Cause(held))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// lead runs the cron while this process is the leader, that is until ctx
// (the leadership's context) ends. since is when this process began to
// compete for the leadership.
func (s *Scheduler) lead(ctx context.Context, since time.Time) error {
	s.leading.Set(1)
	defer s.leading.Set(0)
	// Runs whose process died are failed when this process becomes leader
	// and then at every heartbeat of its runner (on the runner's ticker),
	// because a replica or a command-line run may die at any time, not
	// only with the leader.
	s.failStale(ctx)
	tick, stopTick := s.runner.cfg.Tick(s.runner.cfg.Heartbeat)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		defer stopTick()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				s.failStale(ctx)
			}
		}
	}()
	defer func() { <-checked }()
	// The slots that fell due while no process led are fired first, in
	// the order of the chain, so that a stage finds its predecessor's
	// result.
	missed := s.missedSlots(ctx, since, s.cfg.Now())
	caughtUp := make(chan struct{})
	go func() {
		defer close(caughtUp)
		for _, m := range missed {
			s.log.WarnContext(ctx, "firing a slot that fell due while no process led", "stage", m.stage,
				"slot", m.slot.Format(time.RFC3339))
			_, _ = s.fire(ctx, m.stage, &m.slot)
		}
	}()
	defer func() { <-caughtUp }()
	c := cron.New(cron.WithLocation(pipeline.Berlin), cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
	for _, st := range cronStages {
		sc, ok := s.specs[st]
		if !ok {
			continue
		}
		var id cron.EntryID
		id = c.Schedule(sc, cron.FuncJob(func() {
			// The slot is the time the entry fell due: the cron's loop
			// records it as the entry's Prev before Entry can answer.
			slot := c.Entry(id).Prev
			_, _ = s.fire(ctx, st, &slot)
		}))
	}
	if s.cfg.Sweeper != nil {
		sweep, _ := cronParser.Parse(s.cfg.SweepSpec)
		c.Schedule(sweep, cron.FuncJob(func() {
			swept, err := s.cfg.Sweeper.Sweep(ctx, s.cfg.SweepAge)
			if err != nil {
				s.log.WarnContext(ctx, "lake sweep", "err", err)
				return
			}
			s.log.InfoContext(ctx, "lake swept", "removed", swept)
		}))
	}
	next := map[string]string{}
	for st, t := range s.NextRuns(s.cfg.Now()) {
		next[string(st)] = t.Format(time.RFC3339)
	}
	s.log.InfoContext(ctx, "scheduler is leader", "next", next, "stale_after_s", s.cfg.StaleAfter.Seconds())
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

// failStale fails the running runs whose heartbeat is older than
// StaleAfter: their process ended or hung. Runs that a process is alive to
// execute, on the command line or on another replica, keep their
// heartbeats fresh and are left alone. Then it delivers the committed
// schedule versions still missing from the outbox. A failed check is logged
// and made again on the next tick.
func (s *Scheduler) failStale(ctx context.Context) {
	ids, err := s.runner.store.FailStaleRuns(ctx, s.cfg.Now(), s.cfg.StaleAfter,
		fmt.Sprintf("the process running it stopped: no heartbeat for more than %s", s.cfg.StaleAfter))
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler: failing stale runs", "err", err)
		}
		return
	}
	if len(ids) > 0 {
		s.log.WarnContext(ctx, "marked runs of a dead process as failed", "runs", ids, "stale_after_s", s.cfg.StaleAfter.Seconds())
	}
	// Schedule versions whose run committed but whose delivery to the
	// outbox a crash or a failing outbox interrupted go out now.
	if n, err := s.runner.DeliverSchedules(ctx); err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler: delivering committed schedules", "delivered", n, "err", err)
		}
	} else if n > 0 {
		s.log.WarnContext(ctx, "delivered committed schedules that a crash had kept from the outbox", "versions", n)
	}
}

// slotOf is a stage's slot that a new leader fires late.
type slotOf struct {
	stage pipeline.Stage
	slot  time.Time
}

// missedSlots lists, in the order of the chain, the stages whose latest slot
// at now fell due after since and at most CatchUp ago, and has no run: the
// leader before died and the lock had not passed on yet when it fell due.
// A slot that ran, on whichever process, has a run of the stage fired by
// cron for it or after it.
func (s *Scheduler) missedSlots(ctx context.Context, since, now time.Time) []slotOf {
	from := now.Add(-s.cfg.CatchUp)
	if since.After(from) {
		from = since
	}
	var out []slotOf
	for _, st := range cronStages {
		sc, ok := s.specs[st]
		if !ok {
			continue
		}
		slot, ok := lastSlot(sc, from, now)
		if !ok {
			continue
		}
		runs, err := s.runner.store.Runs(ctx, pipeline.RunQuery{Stage: st, Trigger: "cron", Limit: 1})
		if err != nil {
			s.log.WarnContext(ctx, "scheduler: looking for missed slots", "stage", st, "err", err)
			continue
		}
		if len(runs) > 0 {
			ran := runs[0].StartedAt
			if runs[0].CronSlot != nil {
				ran = *runs[0].CronSlot
			}
			if !ran.Before(slot) {
				continue
			}
		}
		out = append(out, slotOf{st, slot})
	}
	return out
}

// lastSlot is the latest time in (from, now] at which sc falls due.
func lastSlot(sc cron.Schedule, from, now time.Time) (time.Time, bool) {
	var last time.Time
	for t := sc.Next(from.In(pipeline.Berlin)); !t.IsZero() && !t.After(now); t = sc.Next(t) {
		last = t
	}
	return last, !last.IsZero()
}

// Fire runs a stage for the next delivery day as cron does: only when the
// stage before it in the chain has succeeded for that day (a failed stage
// stops the chain), with retries and backoff. The runs it records name no
// cron slot.
func (s *Scheduler) Fire(ctx context.Context, st pipeline.Stage) (pipeline.Run, error) {
	return s.fire(ctx, st, nil)
}

// fire is Fire for the cron slot slot, when not nil: the delivery day
// follows from the slot, and the runs record it, so that a slot that ran
// on another process already is not run again (its record is refused and
// the refusal logged).
func (s *Scheduler) fire(ctx context.Context, st pipeline.Stage, slot *time.Time) (pipeline.Run, error) {
	at := s.cfg.Now()
	if slot != nil {
		at = *slot
	}
	if st == pipeline.StageKalkulation {
		return s.fireKalkulation(ctx, pipeline.DayOf(at), slot)
	}
	day := pipeline.DayOf(at).AddDays(1)
	r := s.runner
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := previous(st); prev != "" {
		runs, err := r.store.Runs(ctx, pipeline.RunQuery{Day: &day, Stage: prev, Limit: 1})
		if err != nil {
			return pipeline.Run{}, err
		}
		if len(runs) == 0 || runs[0].Status != pipeline.RunSucceeded {
			why := fmt.Sprintf("stage %s has not succeeded for %s", prev, day)
			if len(runs) > 0 {
				why = fmt.Sprintf("stage %s is %s for %s (run %d)", prev, runs[0].Status, day, runs[0].ID)
			}
			run := pipeline.Run{Stage: st, Day: day, Trigger: "cron"}
			r.event(ctx, "stage.skipped", run, map[string]any{"reason": why})
			s.log.WarnContext(ctx, "stage skipped: the chain stopped", "stage", st, "day", day.String(), "reason", why)
			return run, pipeline.Errorf(pipeline.Conflict, "%s skipped: %s", st, why)
		}
	}
	run, err := r.withRetries(ctx, st, day, "cron", nil, slot)
	s.logFired(ctx, st, day, run, err)
	return run, err
}

// logFired logs a stage that cron fired and that failed, or whose slot ran
// on another process already.
func (s *Scheduler) logFired(ctx context.Context, st pipeline.Stage, day pipeline.Day, run pipeline.Run, err error) {
	switch {
	case err == nil:
	case run.ID == 0 && pipeline.KindOf(err) == pipeline.Conflict:
		s.log.InfoContext(ctx, "stage not fired: its slot ran already", "stage", st, "day", day.String(), "reason", err)
	default:
		s.log.ErrorContext(ctx, "stage failed", "stage", st, "day", day.String(), "run", run.ID, "err", err)
	}
}

// previous is the stage before st in the chain, "" for the first.
func previous(st pipeline.Stage) pipeline.Stage {
	for i, s := range pipeline.Stages {
		if s == st && i > 0 {
			return pipeline.Stages[i-1]
		}
	}
	return ""
}

// fireKalkulation calculates the last KalkulationDays days before today,
// the oldest first; a day that fails does not keep the others from running.
// It returns the run of yesterday and the first error.
func (s *Scheduler) fireKalkulation(ctx context.Context, today pipeline.Day, slot *time.Time) (pipeline.Run, error) {
	r := s.runner
	r.mu.Lock()
	defer r.mu.Unlock()
	var last pipeline.Run
	var first error
	for back := s.cfg.KalkulationDays; back >= 1; back-- {
		day := today.AddDays(-back)
		run, err := r.withRetries(ctx, pipeline.StageKalkulation, day, "cron", nil, slot)
		if err != nil {
			s.logFired(ctx, pipeline.StageKalkulation, day, run, err)
			if first == nil {
				first = err
			}
		}
		last = run
	}
	return last, first
}
