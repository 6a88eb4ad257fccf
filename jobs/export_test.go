package jobs

import "github.com/prometheus/client_golang/prometheus"

// Wait waits until the runner's background runs have ended, without
// cancelling them, so that tests assert on finished runs without polling.
// No Start may be under way while it waits.
func Wait(r *Runner) { r.running.Wait() }

// LeaderGauge is the scheduler's leader gauge.
func (s *Scheduler) LeaderGauge() prometheus.Gauge { return s.leading }
