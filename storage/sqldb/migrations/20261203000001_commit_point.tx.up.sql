-- The lake files that a run's jobs staged: each job records its parts when
-- it has moved them to their final keys, and the run's commit publishes the
-- parts of all its jobs in the lake's tables, in the same transaction as the
-- run's read model and its success. A job that runs again replaces its own
-- parts.
CREATE TABLE run_parts (
    run_id      BIGINT NOT NULL REFERENCES runs (id),
    dataset     TEXT NOT NULL,
    job         TEXT NOT NULL DEFAULT '',
    object_key  TEXT NOT NULL,
    row_count   BIGINT NOT NULL,
    byte_count  BIGINT NOT NULL,
    staged_at   {{.TS}} NOT NULL,
    PRIMARY KEY (run_id, object_key)
);
--bun:split
-- A schedule version is recorded with its document in its run's commit and
-- is delivered to the outbox after it: delivered_at stays NULL until the
-- document is in the outbox, so that recovery after a crash delivers exactly
-- the committed versions that are not there yet. Versions without a
-- document (those recorded before) have nothing to deliver.
ALTER TABLE schedule_messages ADD COLUMN document {{if eq .TS "TIMESTAMPTZ"}}BYTEA{{else}}BLOB{{end}};
--bun:split
ALTER TABLE schedule_messages ADD COLUMN delivered_at {{.TS}};
--bun:split
CREATE INDEX schedule_messages_undelivered ON schedule_messages (id) WHERE document IS NOT NULL AND delivered_at IS NULL;
