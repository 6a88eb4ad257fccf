-- The process that executes a run refreshes its heartbeat every few seconds
-- (jobs.Config.Heartbeat), so that the scheduler's leader fails only the runs
-- whose process is gone: those whose heartbeat is older than the staleness
-- threshold. A run recorded before this column existed has none; its start
-- time stands in for it (FailStaleRuns).
ALTER TABLE runs ADD COLUMN heartbeat_at {{.TS}};
--bun:split
-- A stage run that the scheduler fired names its cron slot (the time the
-- cron spec fell due). One run per stage, delivery day, slot and attempt:
-- a leader that takes over and fires a slot its predecessor fired already
-- is refused here, so a slot never runs twice, even while two processes
-- believe they lead.
ALTER TABLE runs ADD COLUMN cron_slot {{.TS}};
--bun:split
CREATE UNIQUE INDEX runs_cron_slot ON runs (stage, delivery_day, cron_slot, attempt) WHERE cron_slot IS NOT NULL;
