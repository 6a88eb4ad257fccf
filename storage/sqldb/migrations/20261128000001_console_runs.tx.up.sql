-- The operator console starts and retries runs over the API. A retry names
-- the failed run it retries, and a retried chain the stage it starts at
-- (its stages before it had succeeded already).
ALTER TABLE runs ADD COLUMN retry_of BIGINT;
--bun:split
ALTER TABLE runs ADD COLUMN from_stage TEXT NOT NULL DEFAULT '';
--bun:split
-- A start over the API is idempotent: the key (a hash of the caller and its
-- Idempotency-Key header) is unique among the runs that have one, and the
-- hash of the request tells a repeated request from a different one under
-- the same key.
ALTER TABLE runs ADD COLUMN idempotency_key TEXT;
--bun:split
ALTER TABLE runs ADD COLUMN request_hash TEXT NOT NULL DEFAULT '';
--bun:split
CREATE UNIQUE INDEX runs_idempotency_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;
--bun:split
-- The console lists runs newest first (by id) and pages by keyset (id below
-- the last one seen). Filtered by stage or by status, a year's runs match by
-- the thousand; these indexes hand them out in id order, so a page reads as
-- many rows as it shows. A delivery day's runs (runs_day) are a few dozen,
-- few enough to sort.
CREATE INDEX runs_stage_id ON runs (stage, id);
--bun:split
CREATE INDEX runs_status_id ON runs (status, id);
--bun:split
-- The latest succeeded run of each stage, by finished_at (id breaks ties),
-- is one step into this index per stage.
CREATE INDEX runs_succeeded ON runs (stage, finished_at, id) WHERE status = 'succeeded';
--bun:split
-- The log lines a run wrote while it ran, in the order it wrote them (seq
-- counts per run from 1), so that operators read them from any replica.
-- attrs is the line's attributes as a JSON object.
CREATE TABLE run_logs (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    seq    INTEGER NOT NULL,
    at     {{.TS}} NOT NULL,
    level  TEXT NOT NULL,
    msg    TEXT NOT NULL,
    attrs  TEXT,
    PRIMARY KEY (run_id, seq)
);
