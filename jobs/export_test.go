package jobs

// Wait waits until the runner's background runs have ended, without
// cancelling them, so that tests assert on finished runs without polling.
// No Start may be under way while it waits.
func Wait(r *Runner) { r.running.Wait() }
