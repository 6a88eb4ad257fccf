package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Wait waits until the runner's background runs have ended, without
// cancelling them, so that tests assert on finished runs without polling.
// No Start may be under way while it waits.
func Wait(r *Runner) { r.running.Wait() }

// LeaderGauge is the scheduler's leader gauge.
func (s *Scheduler) LeaderGauge() prometheus.Gauge { return s.leading }

// MissedSlots lists the stages and slots that a leader since since fires
// late at now.
func (s *Scheduler) MissedSlots(ctx context.Context, since, now time.Time) map[pipeline.Stage]time.Time {
	out := map[pipeline.Stage]time.Time{}
	for _, m := range s.missedSlots(ctx, since, now) {
		out[m.stage] = m.slot
	}
	return out
}

// FireSlot fires a stage for a cron slot, as the cron does.
func (s *Scheduler) FireSlot(ctx context.Context, st pipeline.Stage, slot time.Time) (pipeline.Run, error) {
	return s.fire(ctx, st, &slot)
}

// RunEvent is the console event that the runner records about a run, for
// the benchmark's data set.
var RunEvent = runEvent
