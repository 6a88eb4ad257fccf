-- SQLite drops a column only when no index uses it.
DROP INDEX runs_cron_slot;
--bun:split
ALTER TABLE runs DROP COLUMN cron_slot;
--bun:split
ALTER TABLE runs DROP COLUMN heartbeat_at;
