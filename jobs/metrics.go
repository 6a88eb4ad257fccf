package jobs

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/pipeline"
)

// metrics of the runner, registered once by Register.
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	last     *prometheus.GaugeVec
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
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "schedbridge_stage_last_success_timestamp_seconds", Help: "When a stage last succeeded (Unix time), for alerts before the TSO deadline.",
		}, []string{"stage"}),
	}
}

// Register adds the runner's metrics to reg.
func (r *Runner) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{r.m.runs, r.m.duration, r.m.last} {
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
		if run.Status == pipeline.RunSucceeded {
			r.m.last.WithLabelValues(string(run.Stage)).Set(float64(run.FinishedAt.Unix()))
		}
	}
}

// Defaults returns the runner's default schedule receivers and domains, so
// that configuration can override single control areas.
func Defaults() Config {
	return Config{TSOParty: defaultTSOParty(), AreaEIC: defaultAreaEIC()}
}
