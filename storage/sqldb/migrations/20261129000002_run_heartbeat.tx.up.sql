-- The process that executes a run refreshes its heartbeat every few seconds
-- (jobs.Config.Heartbeat), so that the scheduler's leader fails only the runs
-- whose process is gone: those whose heartbeat is older than the staleness
-- threshold. A run recorded before this column existed has none; its start
-- time stands in for it (FailStaleRuns).
ALTER TABLE runs ADD COLUMN heartbeat_at {{.TS}};
