package inbox

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	files       *prometheus.CounterVec
	values      prometheus.Counter
	scanSeconds prometheus.Histogram
	pending     prometheus.Gauge
}

func newMetrics() metrics {
	return metrics{
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedbridge_inbox_files_total",
			Help: "Inbox files handled by this process, by outcome (processed, rejected, busy: claimed elsewhere, failed: left for the next scan or given up on, skipped: given up on and waiting for a retry).",
		}, []string{"outcome"}),
		values: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedbridge_inbox_values_total",
			Help: "Quarter-hour values staged from inbox files.",
		}),
		scanSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "schedbridge_inbox_scan_duration_seconds",
			Help:    "Duration of one inbox scan, including the files it processed.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedbridge_inbox_left_files",
			Help: "Files the last scan left in the inbox (claimed by another process, failed, or given up on and waiting for a retry).",
		}),
	}
}

func (m metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.files, m.values, m.scanSeconds, m.pending} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
