package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// The metrics of the state collector, for GatherAndCompare.
var stateMetrics = []string{
	"schedbridge_stage_last_success_timestamp_seconds", "schedbridge_schedules_sent_total",
	"schedbridge_schedule_messages", "schedbridge_inbox_pending_files",
	"schedbridge_inbox_oldest_pending_age_seconds", "schedbridge_market_partners_red",
	"schedbridge_state_scrape_errors_total",
}

// pendingInbox is a PendingCounter that returns what the test set, or its
// error, and counts its calls and the caps it was asked with.
type pendingInbox struct {
	mu    sync.Mutex
	stats pipeline.PendingInbox
	err   error
	calls int
	caps  []int
}

func (p *pendingInbox) PendingStats(_ context.Context, limit int) (pipeline.PendingInbox, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.caps = append(p.caps, limit)
	return p.stats, p.err
}

func (p *pendingInbox) set(s pipeline.PendingInbox, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats, p.err = s, err
}

// countingDB counts the readings of the database's sources, and fails them
// while fail is set.
type countingDB struct {
	*sqldb.DB
	runs, schedules atomic.Int32
	fail            atomic.Bool
}

var errDown = pipeline.Errorf(pipeline.Unavailable, "database down")

func (c *countingDB) LastSuccesses(ctx context.Context) (map[pipeline.Stage]pipeline.Run, error) {
	c.runs.Add(1)
	if c.fail.Load() {
		return nil, fmt.Errorf("last successes: %w", errDown)
	}
	return c.DB.LastSuccesses(ctx)
}

func (c *countingDB) ScheduleStats(ctx context.Context) (pipeline.ScheduleStats, error) {
	c.schedules.Add(1)
	if c.fail.Load() {
		return pipeline.ScheduleStats{}, fmt.Errorf("schedule stats: %w", errDown)
	}
	return c.DB.ScheduleStats(ctx)
}

// failingOverview is a PartnerOverview that always fails.
type failingOverview struct{}

func (failingOverview) Overview(context.Context, int, string) (mako.Overview, error) {
	return mako.Overview{}, errors.New("overview: connection refused")
}

// succeeded records a run of st from the command line that succeeded at
// at, a minute after it started.
func succeeded(t *testing.T, db *sqldb.DB, st pipeline.Stage, at time.Time) {
	t.Helper()
	ctx := context.Background()
	r, err := db.CreateRun(ctx, pipeline.Run{Stage: st, Day: day, Trigger: "cli", StartedAt: at.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, r.ID, pipeline.RunSucceeded, "", nil, at); err != nil {
		t.Fatal(err)
	}
}

func unix(t time.Time) string { return fmt.Sprint(float64(t.UnixMicro()) / 1e6) }

func compare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		names = stateMetrics
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestStateMetrics: after the chain ran, the TSO answered, a market partner
// rejected our PARTIN and files wait in the inbox, the collector reports
// all of it from the recorded state, on both databases.
func TestStateMetrics(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 60)
		chain, err := e.runner().Orchestrate(ctx, day, "test")
		if err != nil {
			t.Fatal(err)
		}
		stages, err := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if err != nil || len(stages) != 4 {
			t.Fatalf("stage runs %v, %v", stages, err)
		}
		// A failed run later than the success does not move the stage's
		// last success.
		failed, err := e.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: day, Trigger: "cli", StartedAt: t0.Add(48 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.FinishRun(ctx, failed.ID, pipeline.RunFailed, "no locations", nil, t0.Add(49*time.Hour)); err != nil {
			t.Fatal(err)
		}
		// The TSO confirms one message and rejects the other.
		msgs, err := e.db.Schedules(ctx, "p1", day)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("schedules %v, %v", msgs, err)
		}
		if err := e.db.RecordScheduleAnswer(ctx, msgs[0].ID, pipeline.ScheduleConfirmed, "CNF", t0.Add(time.Hour), "k1", ""); err != nil {
			t.Fatal(err)
		}
		if err := e.db.RecordScheduleAnswer(ctx, msgs[1].ID, pipeline.ScheduleRejected, "ACK", t0.Add(time.Hour), "k2", ""); err != nil {
			t.Fatal(err)
		}
		// DSO B rejects our PARTIN with a CONTRL: its overview row is red.
		mclk := &fixedClock{t: time.Date(2026, 11, 16, 8, 0, 0, 0, time.UTC)}
		m := e.mako(t, mclk)
		e.put(t, jobs.RegistryPrefix+"dsos.csv", registryCSV)
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		partin, err := m.Send(ctx, dsoB, mako.PartinOut)
		if err != nil {
			t.Fatal(err)
		}
		mclk.Set(mclk.Now().Add(24 * time.Hour))
		e.put(t, jobs.EDIInPrefix+"b/contrl.edi", edi(dsoB, "CTB0001", "CTB1", "CONTRL:D:3:UN:2.0b", mclk.Now(),
			"UCI+"+partin.InterchangeRef+"+"+us+":500+"+dsoB+":500+4"))
		if _, err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}

		clk := clocktest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
		oldest := clk.Now().Add(-90 * time.Second)
		inbox := &pendingInbox{stats: pipeline.PendingInbox{Count: 3, Oldest: &oldest}}
		c := jobs.NewStateCollector(jobs.StateSources{Runs: e.db, Schedules: e.db, Inbox: inbox, Partners: m},
			jobs.StateConfig{Now: clk.Now, PendingCap: 500})
		reg := prometheus.NewPedanticRegistry()
		if err := c.Register(reg); err != nil {
			t.Fatal(err)
		}

		var want strings.Builder
		fmt.Fprintln(&want, "# HELP schedbridge_stage_last_success_timestamp_seconds When the newest succeeded run of a stage finished (Unix time), from the run records, for alerts before the TSO deadline.")
		fmt.Fprintln(&want, "# TYPE schedbridge_stage_last_success_timestamp_seconds gauge")
		fmt.Fprintf(&want, "schedbridge_stage_last_success_timestamp_seconds{stage=%q} %s\n", "chain", unix(*chain.FinishedAt))
		for _, r := range stages {
			if r.Status != pipeline.RunSucceeded {
				t.Fatalf("stage run %+v", r)
			}
			fmt.Fprintf(&want, "schedbridge_stage_last_success_timestamp_seconds{stage=%q} %s\n", r.Stage, unix(*r.FinishedAt))
		}
		fmt.Fprint(&want, `# HELP schedbridge_schedules_sent_total Schedule messages sent to the TSOs (every recorded version), from the database.
# TYPE schedbridge_schedules_sent_total counter
schedbridge_schedules_sent_total 2
# HELP schedbridge_schedule_messages Schedule messages sent to the TSOs by the status their answers left them in (submitted: no answer yet).
# TYPE schedbridge_schedule_messages gauge
schedbridge_schedule_messages{status="acknowledged"} 0
schedbridge_schedule_messages{status="anomaly"} 0
schedbridge_schedule_messages{status="confirmed"} 1
schedbridge_schedule_messages{status="rejected"} 1
schedbridge_schedule_messages{status="submitted"} 0
# HELP schedbridge_inbox_pending_files Inbox files that no process has claimed yet, counted up to a cap.
# TYPE schedbridge_inbox_pending_files gauge
schedbridge_inbox_pending_files 3
# HELP schedbridge_inbox_oldest_pending_age_seconds How long the oldest pending inbox file has waited; 0 when none waits.
# TYPE schedbridge_inbox_oldest_pending_age_seconds gauge
schedbridge_inbox_oldest_pending_age_seconds 90
# HELP schedbridge_market_partners_red Market partners whose overview row is red (a rejection in the overview's window).
# TYPE schedbridge_market_partners_red gauge
schedbridge_market_partners_red 1
# HELP schedbridge_state_scrape_errors_total Failed readings of a source of the recorded-state metrics; its metrics are left out until a reading succeeds.
# TYPE schedbridge_state_scrape_errors_total counter
schedbridge_state_scrape_errors_total{source="inbox"} 0
schedbridge_state_scrape_errors_total{source="market_partners"} 0
schedbridge_state_scrape_errors_total{source="runs"} 0
schedbridge_state_scrape_errors_total{source="schedules"} 0
`)
		compare(t, reg, want.String())
		// The served /metrics lacks the inbox's metrics until the processor
		// is wired (cmd/schedbridge checks it with promtool), so the names
		// are linted here too, with the linter promtool runs.
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if problems, err := promlint.NewWithMetricFamilies(mfs).Lint(); err != nil || len(problems) != 0 {
			t.Errorf("lint: %v %+v", err, problems)
		}
		if inbox.calls != 1 || inbox.caps[0] != 500 {
			t.Errorf("pending inbox read %d times with caps %v, want once with 500", inbox.calls, inbox.caps)
		}
	})
}

// TestStateMetricsCache: a reading serves every scrape for the refresh time
// on the injected clock, a burst of concurrent scrapes costs one reading,
// and the oldest pending file ages at every scrape all the same.
func TestStateMetricsCache(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := &countingDB{DB: sqltest.Open(t, d)}
			succeeded(t, db.DB, pipeline.StageForecast, t0)

			clk := clocktest.New(t0.Add(time.Hour))
			oldest := clk.Now().Add(-time.Minute)
			inbox := &pendingInbox{stats: pipeline.PendingInbox{Count: 1, Oldest: &oldest}}
			c := jobs.NewStateCollector(jobs.StateSources{Runs: db, Schedules: db, Inbox: inbox}, jobs.StateConfig{Now: clk.Now})
			reg := prometheus.NewPedanticRegistry()
			if err := c.Register(reg); err != nil {
				t.Fatal(err)
			}
			last := func(at time.Time) string {
				return fmt.Sprintf(`# HELP schedbridge_stage_last_success_timestamp_seconds When the newest succeeded run of a stage finished (Unix time), from the run records, for alerts before the TSO deadline.
# TYPE schedbridge_stage_last_success_timestamp_seconds gauge
schedbridge_stage_last_success_timestamp_seconds{stage="forecast"} %s
`, unix(at))
			}
			age := func(s float64) string {
				return fmt.Sprintf(`# HELP schedbridge_inbox_oldest_pending_age_seconds How long the oldest pending inbox file has waited; 0 when none waits.
# TYPE schedbridge_inbox_oldest_pending_age_seconds gauge
schedbridge_inbox_oldest_pending_age_seconds %v
`, s)
			}
			reads := func(want int32) {
				t.Helper()
				inbox.mu.Lock()
				calls := inbox.calls
				inbox.mu.Unlock()
				if db.runs.Load() != want || db.schedules.Load() != want || calls != int(want) {
					t.Errorf("readings: runs %d, schedules %d, inbox %d; want %d each", db.runs.Load(), db.schedules.Load(), calls, want)
				}
			}

			// A burst of scrapes at once: one reading.
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if _, err := reg.Gather(); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			reads(1)
			compare(t, reg, last(t0)+age(60), "schedbridge_stage_last_success_timestamp_seconds", "schedbridge_inbox_oldest_pending_age_seconds")

			// A newer success and fewer files, just before the refresh time:
			// the scrape still shows the cached reading, and the file has
			// aged with the clock.
			succeeded(t, db.DB, pipeline.StageForecast, t0.Add(30*time.Minute))
			inbox.set(pipeline.PendingInbox{}, nil)
			clk.Add(10*time.Second - time.Nanosecond)
			compare(t, reg, last(t0)+age(69.999999999), "schedbridge_stage_last_success_timestamp_seconds", "schedbridge_inbox_oldest_pending_age_seconds")
			reads(1)

			// At the refresh time the sources are read again; with no file
			// pending the age is 0.
			clk.Add(time.Nanosecond)
			compare(t, reg, last(t0.Add(30*time.Minute))+age(0), "schedbridge_stage_last_success_timestamp_seconds", "schedbridge_inbox_oldest_pending_age_seconds")
			reads(2)

			// A clock that went back makes the reading stale, not fresh for
			// longer.
			clk.Add(-time.Minute)
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			reads(3)
		})
	}
}

// TestStateMetricsFailingSource: a source that fails leaves out its own
// metrics and counts the failure, once per reading, while the scrape
// succeeds with the other sources' metrics; when it recovers its metrics
// come back.
func TestStateMetricsFailingSource(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := &countingDB{DB: sqltest.Open(t, d)}
			succeeded(t, db.DB, pipeline.StageSchedules, t0.Add(time.Minute))
			var logs syncBuffer
			clk := clocktest.New(t0.Add(time.Hour))
			inbox := &pendingInbox{err: errors.New("list inbox/: connection refused")}
			c := jobs.NewStateCollector(jobs.StateSources{Runs: db, Schedules: db, Inbox: inbox, Partners: failingOverview{}},
				jobs.StateConfig{Now: clk.Now, Logger: slogTo(&logs)})
			// The whole registry, as /metrics serves it: another collector
			// beside the state collector must not be lost either.
			reg := prometheus.NewPedanticRegistry()
			other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedbridge_test_other", Help: "Another metric."})
			other.Set(7)
			reg.MustRegister(other)
			if err := c.Register(reg); err != nil {
				t.Fatal(err)
			}
			present := func(want ...string) {
				t.Helper()
				mfs, err := reg.Gather()
				if err != nil {
					t.Fatalf("the scrape failed: %v", err)
				}
				var got []string
				for _, mf := range mfs {
					got = append(got, mf.GetName())
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("metrics %v, want %v", got, want)
				}
			}
			errorsWant := func(inbox, partners, runs, schedules int) string {
				return fmt.Sprintf(`# HELP schedbridge_state_scrape_errors_total Failed readings of a source of the recorded-state metrics; its metrics are left out until a reading succeeds.
# TYPE schedbridge_state_scrape_errors_total counter
schedbridge_state_scrape_errors_total{source="inbox"} %d
schedbridge_state_scrape_errors_total{source="market_partners"} %d
schedbridge_state_scrape_errors_total{source="runs"} %d
schedbridge_state_scrape_errors_total{source="schedules"} %d
`, inbox, partners, runs, schedules)
			}

			present("schedbridge_schedule_messages", "schedbridge_schedules_sent_total", "schedbridge_stage_last_success_timestamp_seconds",
				"schedbridge_state_scrape_errors_total", "schedbridge_test_other")
			compare(t, reg, errorsWant(1, 1, 0, 0), "schedbridge_state_scrape_errors_total")
			for _, w := range []string{`source=inbox`, `source=market_partners`, "connection refused"} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
			// Scrapes within the refresh time count the failure once.
			clk.Add(5 * time.Second)
			compare(t, reg, errorsWant(1, 1, 0, 0), "schedbridge_state_scrape_errors_total")

			// The database goes away and the inbox comes back.
			db.fail.Store(true)
			inbox.set(pipeline.PendingInbox{Count: 2}, nil)
			clk.Add(5 * time.Second)
			present("schedbridge_inbox_oldest_pending_age_seconds", "schedbridge_inbox_pending_files",
				"schedbridge_state_scrape_errors_total", "schedbridge_test_other")
			compare(t, reg, errorsWant(1, 2, 1, 1), "schedbridge_state_scrape_errors_total")
			if !strings.Contains(logs.String(), "kind=unavailable") {
				t.Errorf("log lacks the kind of the database's error:\n%s", logs.String())
			}

			// The database is back: the last success is the recorded one.
			db.fail.Store(false)
			clk.Add(10 * time.Second)
			compare(t, reg, fmt.Sprintf(`# HELP schedbridge_stage_last_success_timestamp_seconds When the newest succeeded run of a stage finished (Unix time), from the run records, for alerts before the TSO deadline.
# TYPE schedbridge_stage_last_success_timestamp_seconds gauge
schedbridge_stage_last_success_timestamp_seconds{stage="schedules"} %s
`, unix(t0.Add(time.Minute)))+errorsWant(1, 3, 1, 1), "schedbridge_stage_last_success_timestamp_seconds", "schedbridge_state_scrape_errors_total")
		})
	}
}

// TestStateMetricsOptional: sources left nil export nothing, not even their
// error count.
func TestStateMetricsOptional(t *testing.T) {
	db := sqltest.Open(t, sqldb.SQLite)
	c := jobs.NewStateCollector(jobs.StateSources{Runs: db}, jobs.StateConfig{Now: clocktest.New(t0).Now})
	reg := prometheus.NewPedanticRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	// No run has succeeded: no stage has a sample.
	compare(t, reg, `# HELP schedbridge_state_scrape_errors_total Failed readings of a source of the recorded-state metrics; its metrics are left out until a reading succeeds.
# TYPE schedbridge_state_scrape_errors_total counter
schedbridge_state_scrape_errors_total{source="runs"} 0
`)
}

// syncBuffer is a log sink that the collector's goroutines and the test
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
