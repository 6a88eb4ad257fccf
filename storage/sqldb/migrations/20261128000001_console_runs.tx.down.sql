DROP TABLE run_logs;
--bun:split
DROP INDEX runs_succeeded;
--bun:split
DROP INDEX runs_status_id;
--bun:split
DROP INDEX runs_stage_id;
--bun:split
-- SQLite drops a column only when no index uses it.
DROP INDEX runs_idempotency_key;
--bun:split
ALTER TABLE runs DROP COLUMN request_hash;
--bun:split
ALTER TABLE runs DROP COLUMN idempotency_key;
--bun:split
ALTER TABLE runs DROP COLUMN from_stage;
--bun:split
ALTER TABLE runs DROP COLUMN retry_of;
