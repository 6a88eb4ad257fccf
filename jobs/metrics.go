package jobs

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// metrics of the runner, registered once by Register: what this process ran.
// When a stage last succeeded is recorded state, which StateCollector reads
// from the database, so that a run of another process counts too.
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() metrics {
	return metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedbridge_stage_runs_total", Help: "Stage runs by stage and final status.",
		}, []string{"stage", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "schedbridge_stage_duration_seconds", Help: "Wall time of stage runs.",
			Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}, []string{"stage"}),
	}
}

// Register adds the runner's metrics to reg.
func (r *Runner) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{r.m.runs, r.m.duration} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) observe(run pipeline.Run) {
	r.m.runs.WithLabelValues(string(run.Stage), string(run.Status)).Inc()
	if run.FinishedAt != nil {
		r.m.duration.WithLabelValues(string(run.Stage)).Observe(run.FinishedAt.Sub(run.StartedAt).Seconds())
	}
}

// Defaults returns the runner's default schedule receivers and domains, so
// that configuration can override single control areas.
func Defaults() Config {
	return Config{TSOParty: defaultTSOParty(), AreaEIC: defaultAreaEIC()}
}

// makoMetrics are the market communication's sync metrics.
type makoMetrics struct {
	indexed  *prometheus.CounterVec
	syncs    *prometheus.CounterVec
	duration prometheus.Histogram
	queue    prometheus.Gauge
}

func newMakoMetrics() makoMetrics {
	return makoMetrics{
		indexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedbridge_mako_indexed_total", Help: "Files and mails the market-communication sync indexed, by channel and outcome.",
		}, []string{"channel", "outcome"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedbridge_mako_syncs_total", Help: "Market-communication syncs by result.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "schedbridge_mako_sync_duration_seconds", Help: "Wall time of market-communication syncs.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedbridge_mako_vormerkungen", Help: "Pre-listings waiting in the re-send queue after the last sync.",
		}),
	}
}

// Register adds the market communication's metrics to reg.
func (m *Mako) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.m.indexed, m.m.syncs, m.m.duration, m.m.queue} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Mako) observe(rep mako.SyncReport, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.m.syncs.WithLabelValues(result).Inc()
	m.m.duration.Observe(rep.Duration.Seconds())
	m.m.indexed.WithLabelValues("edifact", "parsed").Add(float64(rep.EDIFiles - rep.EDIUnparsable))
	m.m.indexed.WithLabelValues("edifact", "unparseable").Add(float64(rep.EDIUnparsable))
	m.m.indexed.WithLabelValues("mail_file", "parsed").Add(float64(rep.MailFiles))
	m.m.indexed.WithLabelValues("mail_file", "unparseable").Add(float64(rep.MailRejected))
	m.m.indexed.WithLabelValues("imap", "parsed").Add(float64(rep.IMAPMails))
	for _, r := range rep.Registry {
		outcome := "imported"
		if r.Error != "" {
			outcome = "rejected"
		}
		m.m.indexed.WithLabelValues("registry", outcome).Inc()
	}
}
