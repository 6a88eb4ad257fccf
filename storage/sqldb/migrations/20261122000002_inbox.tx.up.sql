-- The bulk inbox: one row per life of a dropped file, from its claim until it
-- is moved to processed/ or rejected/, and the event log the console reads.
-- A row is open while its state is processing, staged or rejecting; at most
-- one open row exists per object key, so two processes never both own a file.
CREATE TABLE inbox_files (
    id           {{.ID}},
    object_key   TEXT NOT NULL,
    etag         TEXT NOT NULL,
    size         BIGINT NOT NULL,
    portfolio_id TEXT NOT NULL DEFAULT '',
    kind         TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL DEFAULT '',
    state        TEXT NOT NULL,
    owner        TEXT NOT NULL,
    lease_until  {{.TS}} NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 1,
    input_hash   TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    dest_key     TEXT NOT NULL DEFAULT '',
    result       TEXT NOT NULL DEFAULT '',
    claimed_at   {{.TS}} NOT NULL,
    finished_at  {{.TS}}
);
--bun:split
CREATE UNIQUE INDEX inbox_files_open ON inbox_files (object_key) WHERE state IN ('processing', 'staged', 'rejecting');
--bun:split
CREATE INDEX inbox_files_finished ON inbox_files (finished_at);
--bun:split
CREATE TABLE events (
    id           {{.ID}},
    at           {{.TS}} NOT NULL,
    kind         TEXT NOT NULL,
    portfolio_id TEXT NOT NULL DEFAULT '',
    subject      TEXT NOT NULL,
    data         TEXT NOT NULL
);
--bun:split
CREATE INDEX events_at ON events (at);
