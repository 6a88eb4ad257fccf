package jobs

import (
	"context"
	"time"
)

// DefaultHeartbeat is how often a runner refreshes the heartbeat of the runs
// it executes, and DefaultStaleAfter how old a heartbeat may get before the
// scheduler's leader fails the run as abandoned: three missed heartbeats, so
// that one slow database write does not fail a live run.
const (
	DefaultHeartbeat  = 10 * time.Second
	DefaultStaleAfter = 3 * DefaultHeartbeat
)

// TickFunc starts a ticker of period d and returns its channel and the
// function that stops it. The runner's heartbeat and the leader's check for
// stale runs tick with it, so that tests drive them instead of the wall clock.
type TickFunc func(d time.Duration) (<-chan time.Time, func())

// wallTicker is the TickFunc of time.NewTicker.
func wallTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// track starts the heartbeat of a run that this runner has recorded and is
// about to execute, until untrack. One goroutine beats for all the runs
// being executed (a chain and its current stage, background runs waiting
// for the runner), and only while there is one.
func (r *Runner) track(id int64) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	r.live[id] = true
	if r.beatStop == nil {
		stop := make(chan struct{})
		r.beatStop = stop
		go r.heartbeat(stop)
	}
}

// committing marks a live run whose record its commit may finish at any
// moment: a heartbeat that finds the record no longer running is then no
// sign that the leader failed it. The run keeps its heartbeat until untrack.
func (r *Runner) committing(id int64) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if _, ok := r.live[id]; ok {
		r.live[id] = false
	}
}

// untrack ends the heartbeat of a run whose record is finished.
func (r *Runner) untrack(id int64) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	delete(r.live, id)
	if len(r.live) == 0 && r.beatStop != nil {
		close(r.beatStop)
		r.beatStop = nil
	}
}

// liveRuns lists the runs being executed.
func (r *Runner) liveRuns() []int64 {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	ids := make([]int64, 0, len(r.live))
	for id := range r.live {
		ids = append(ids, id)
	}
	return ids
}

// heartbeat refreshes the heartbeat of the live runs on every tick until
// stop is closed. A failed write is logged and tried again on the next
// tick: the threshold allows for missed beats. A run whose record is no
// longer running was failed as stale by the leader (this process stalled
// for longer than the threshold): the process log says so, because the
// result of the work still going on will not be recorded, and it is not
// beaten for again. (The run's own log is numbered by the goroutine that
// executes it, so this goroutine does not write there.)
func (r *Runner) heartbeat(stop <-chan struct{}) {
	tick, stopTick := r.cfg.Tick(r.cfg.Heartbeat)
	defer stopTick()
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		ids := r.liveRuns()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Heartbeat)
		gone, err := r.store.HeartbeatRuns(ctx, ids, r.cfg.Now())
		cancel()
		if err != nil {
			r.cfg.Logger.Warn("run heartbeat failed; trying again on the next beat", "runs", ids, "err", err)
			continue
		}
		for _, id := range gone {
			// A run that left the live set meanwhile has finished here, and
			// one being committed may just have; only one still being
			// executed was failed by the leader.
			r.liveMu.Lock()
			failed := r.live[id]
			delete(r.live, id)
			r.liveMu.Unlock()
			if failed {
				r.cfg.Logger.Warn("the run's record is no longer running (its heartbeat was stale, so the scheduler's leader "+
					"failed it); the work still in progress here will not be recorded", "run", id)
			}
		}
	}
}
