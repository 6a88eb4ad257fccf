package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The state collector reports what the database and the bucket record, not
// what this process happened to do: a run started with `schedbridge run`, by
// another replica or before a restart shows the same on every replica.

// SuccessTimes is where the state collector reads the newest succeeded run
// of each stage, whose finish time it reports (storage/sqldb, the query the
// console's summary makes too).
type SuccessTimes interface {
	LastSuccesses(ctx context.Context) (map[pipeline.Stage]pipeline.Run, error)
}

// ScheduleCounter is where the state collector counts the schedule messages
// sent and their answers (storage/sqldb).
type ScheduleCounter interface {
	ScheduleStats(ctx context.Context) (pipeline.ScheduleStats, error)
}

// PendingCounter sums up the inbox files that no process has claimed yet,
// counting at most cap of them (the inbox processor).
type PendingCounter interface {
	PendingStats(ctx context.Context, cap int) (pipeline.PendingInbox, error)
}

// PartnerOverview is the market-partner overview, whose red rows the state
// collector counts (Mako).
type PartnerOverview interface {
	Overview(ctx context.Context, tage int, ordnung string) (mako.Overview, error)
}

// StateSources are what the state collector reads. A nil source exports
// none of its metrics.
type StateSources struct {
	Runs      SuccessTimes
	Schedules ScheduleCounter
	Inbox     PendingCounter
	Partners  PartnerOverview
}

// StateConfig tunes the state collector. Zero values take the defaults
// noted.
type StateConfig struct {
	// Now is the clock that ages the cache and the oldest pending file.
	Now func() time.Time
	// Refresh is how long one reading of the sources serves scrapes
	// (default 10 s), so that a burst of scrapes, or several Prometheus
	// servers, cost one reading.
	Refresh time.Duration
	// Timeout bounds one reading of all sources (default 5 s), below the
	// usual scrape timeout of 10 s.
	Timeout time.Duration
	// PendingCap is how many pending inbox files are counted at most
	// (default 10,000): a bucket that is far behind is not listed in full
	// on every refresh.
	PendingCap int
	// PartnerDays is the window of the market-partner overview in days
	// (default 365, the console's default).
	PartnerDays int
	Logger      *slog.Logger
}

// The names of the sources in schedbridge_state_scrape_errors_total.
const (
	sourceRuns      = "runs"
	sourceSchedules = "schedules"
	sourceInbox     = "inbox"
	sourcePartners  = "market_partners"
)

// scheduleStatuses are the schedule states exported, zeros included, in the
// order a message moves through them.
var scheduleStatuses = []pipeline.ScheduleStatus{
	pipeline.ScheduleSubmitted, pipeline.ScheduleAcknowledged, pipeline.ScheduleRejected,
	pipeline.ScheduleAnomaly, pipeline.ScheduleConfirmed,
}

// StateCollector is a prometheus.Collector over the recorded state: the
// last success of each stage, the schedule messages and their answers, the
// pending inbox and the red market partners. It reads its sources when a
// scrape finds its last reading older than the refresh time. A source that
// fails is logged and counted in schedbridge_state_scrape_errors_total, and
// its metrics are left out until a reading succeeds again, so that neither
// the other sources nor the rest of /metrics are lost with it, and no stale
// value passes for a current one.
type StateCollector struct {
	src StateSources
	cfg StateConfig
	log *slog.Logger

	lastSuccess  *prometheus.Desc
	sent         *prometheus.Desc
	messages     *prometheus.Desc
	pending      *prometheus.Desc
	pendingAge   *prometheus.Desc
	redPartners  *prometheus.Desc
	scrapeErrors *prometheus.CounterVec

	// mu makes concurrent scrapes wait for the one reading in progress
	// instead of starting their own.
	mu   sync.Mutex
	last *stateReading
}

// stateReading is one reading of the sources; ok says which succeeded.
type stateReading struct {
	at        time.Time
	ok        map[string]bool
	successes map[pipeline.Stage]pipeline.Run
	schedules pipeline.ScheduleStats
	pending   pipeline.PendingInbox
	red       int
}

// NewStateCollector returns the collector over the sources.
func NewStateCollector(src StateSources, cfg StateConfig) *StateCollector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.PendingCap <= 0 {
		cfg.PendingCap = 10000
	}
	if cfg.PartnerDays <= 0 {
		cfg.PartnerDays = 365
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &StateCollector{
		src: src, cfg: cfg, log: cfg.Logger,
		lastSuccess: prometheus.NewDesc("schedbridge_stage_last_success_timestamp_seconds",
			"When the newest succeeded run of a stage finished (Unix time), from the run records, for alerts before the TSO deadline.",
			[]string{"stage"}, nil),
		sent: prometheus.NewDesc("schedbridge_schedules_sent_total",
			"Schedule messages sent to the TSOs (every recorded version), from the database.", nil, nil),
		messages: prometheus.NewDesc("schedbridge_schedule_messages",
			"Schedule messages sent to the TSOs by the status their answers left them in (submitted: no answer yet).",
			[]string{"status"}, nil),
		pending: prometheus.NewDesc("schedbridge_inbox_pending_files",
			"Inbox files that no process has claimed yet, counted up to a cap.", nil, nil),
		pendingAge: prometheus.NewDesc("schedbridge_inbox_oldest_pending_age_seconds",
			"How long the oldest pending inbox file has waited; 0 when none waits.", nil, nil),
		redPartners: prometheus.NewDesc("schedbridge_market_partners_red",
			"Market partners whose overview row is red (a rejection in the overview's window).", nil, nil),
		scrapeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedbridge_state_scrape_errors_total",
			Help: "Failed readings of a source of the recorded-state metrics; its metrics are left out until a reading succeeds.",
		}, []string{"source"}),
	}
	// Every configured source shows its error count from the start, so that
	// an alert on its increase has a series to compare with.
	for _, s := range c.sources() {
		c.scrapeErrors.WithLabelValues(s)
	}
	return c
}

// sources names the configured sources.
func (c *StateCollector) sources() []string {
	var out []string
	if c.src.Runs != nil {
		out = append(out, sourceRuns)
	}
	if c.src.Schedules != nil {
		out = append(out, sourceSchedules)
	}
	if c.src.Inbox != nil {
		out = append(out, sourceInbox)
	}
	if c.src.Partners != nil {
		out = append(out, sourcePartners)
	}
	return out
}

// Register adds the collector to reg.
func (c *StateCollector) Register(reg prometheus.Registerer) error {
	return reg.Register(c)
}

// Describe sends the descriptions of the configured sources' metrics.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.src.Runs != nil {
		ch <- c.lastSuccess
	}
	if c.src.Schedules != nil {
		ch <- c.sent
		ch <- c.messages
	}
	if c.src.Inbox != nil {
		ch <- c.pending
		ch <- c.pendingAge
	}
	if c.src.Partners != nil {
		ch <- c.redPartners
	}
	c.scrapeErrors.Describe(ch)
}

// Collect sends the metrics of the last reading, reading the sources first
// when it is older than the refresh time.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reading()
	now := c.cfg.Now()
	if r.ok[sourceRuns] {
		for st, run := range r.successes {
			if run.FinishedAt != nil {
				ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, float64(run.FinishedAt.UnixMicro())/1e6, string(st))
			}
		}
	}
	if r.ok[sourceSchedules] {
		// The messages only grow in number, so the total is a counter even
		// though it is read from the database rather than counted here.
		ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(r.schedules.Sent))
		for _, st := range scheduleStatuses {
			ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(r.schedules.ByStatus[st]), string(st))
		}
	}
	if r.ok[sourceInbox] {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(r.pending.Count))
		// The age is taken at the scrape, not at the reading, so that it
		// keeps growing while the reading is cached.
		age := 0.0
		if r.pending.Oldest != nil {
			age = max(0, now.Sub(*r.pending.Oldest).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(c.pendingAge, prometheus.GaugeValue, age)
	}
	if r.ok[sourcePartners] {
		ch <- prometheus.MustNewConstMetric(c.redPartners, prometheus.GaugeValue, float64(r.red))
	}
	c.scrapeErrors.Collect(ch)
}

// reading returns the last reading while it is fresh, else a new one. A
// clock that went back makes the reading stale rather than fresh for longer.
func (c *StateCollector) reading() *stateReading {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.last != nil {
		if age := now.Sub(c.last.at); age >= 0 && age < c.cfg.Refresh {
			return c.last
		}
	}
	c.last = c.read(now)
	return c.last
}

// read reads all configured sources at once, each on its own, so that a
// slow or failing one neither delays nor spoils the others beyond the
// common timeout.
func (c *StateCollector) read(now time.Time) *stateReading {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	r := &stateReading{at: now, ok: map[string]bool{}}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[string]error{}
	)
	run := func(source string, fn func() error) {
		wg.Go(func() {
			err := fn()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[source] = err
				return
			}
			r.ok[source] = true
		})
	}
	if c.src.Runs != nil {
		run(sourceRuns, func() (err error) {
			r.successes, err = c.src.Runs.LastSuccesses(ctx)
			return err
		})
	}
	if c.src.Schedules != nil {
		run(sourceSchedules, func() (err error) {
			r.schedules, err = c.src.Schedules.ScheduleStats(ctx)
			return err
		})
	}
	if c.src.Inbox != nil {
		run(sourceInbox, func() (err error) {
			r.pending, err = c.src.Inbox.PendingStats(ctx, c.cfg.PendingCap)
			return err
		})
	}
	if c.src.Partners != nil {
		run(sourcePartners, func() error {
			ov, err := c.src.Partners.Overview(ctx, c.cfg.PartnerDays, mako.OrderStatus)
			r.red = ov.Counts[mako.Red]
			return err
		})
	}
	wg.Wait()
	for source, err := range errs {
		c.scrapeErrors.WithLabelValues(source).Inc()
		c.log.Warn("metrics: reading the recorded state failed; its metrics are left out until the next reading",
			"source", source, "err", err, "kind", string(pipeline.KindOf(err)))
	}
	return r
}
