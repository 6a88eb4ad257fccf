-- Foundation schema: portfolios, API keys, the audit trail and the staging area.
-- The ID and TS placeholders are filled per dialect so that one file serves
-- SQLite and PostgreSQL.
CREATE TABLE portfolios (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    control_areas   TEXT NOT NULL,
    balancing_group TEXT NOT NULL DEFAULT '',
    created_at      {{.TS}} NOT NULL,
    updated_at      {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    scope        TEXT NOT NULL,
    portfolio_id TEXT REFERENCES portfolios (id),
    label        TEXT NOT NULL DEFAULT '',
    created_at   {{.TS}} NOT NULL,
    revoked_at   {{.TS}}
);
--bun:split
CREATE TABLE audit_entries (
    id           {{.ID}},
    received_at  {{.TS}} NOT NULL,
    key_id       TEXT,
    portfolio_id TEXT,
    endpoint     TEXT NOT NULL,
    input_hash   TEXT,
    outcome      TEXT NOT NULL,
    status_code  INTEGER NOT NULL,
    counts       TEXT,
    detail       TEXT
);
--bun:split
CREATE INDEX audit_entries_hash ON audit_entries (portfolio_id, input_hash);
--bun:split
CREATE INDEX audit_entries_time ON audit_entries (received_at);
--bun:split
CREATE TABLE forecast_versions (
    id            {{.ID}},
    portfolio_id  TEXT NOT NULL REFERENCES portfolios (id),
    delivery_day  TEXT NOT NULL,
    version       INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    input_hash    TEXT NOT NULL,
    body          TEXT NOT NULL,
    received_at   {{.TS}} NOT NULL,
    superseded_at {{.TS}},
    UNIQUE (portfolio_id, delivery_day, version)
);
--bun:split
CREATE UNIQUE INDEX forecast_versions_current ON forecast_versions (portfolio_id, delivery_day) WHERE superseded_at IS NULL;
--bun:split
CREATE TABLE location_versions (
    id            {{.ID}},
    portfolio_id  TEXT NOT NULL REFERENCES portfolios (id),
    malo          TEXT NOT NULL,
    version       INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    input_hash    TEXT NOT NULL,
    slices        TEXT NOT NULL,
    received_at   {{.TS}} NOT NULL,
    superseded_at {{.TS}},
    UNIQUE (portfolio_id, malo, version)
);
--bun:split
CREATE UNIQUE INDEX location_versions_current ON location_versions (portfolio_id, malo) WHERE superseded_at IS NULL;
--bun:split
CREATE TABLE metered_versions (
    id            {{.ID}},
    portfolio_id  TEXT NOT NULL REFERENCES portfolios (id),
    malo          TEXT NOT NULL,
    day           TEXT NOT NULL,
    version       INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    input_hash    TEXT NOT NULL,
    unit          TEXT NOT NULL,
    vals          TEXT NOT NULL,
    received_at   {{.TS}} NOT NULL,
    superseded_at {{.TS}},
    UNIQUE (portfolio_id, malo, day, version)
);
--bun:split
CREATE UNIQUE INDEX metered_versions_current ON metered_versions (portfolio_id, malo, day) WHERE superseded_at IS NULL;
--bun:split
CREATE TABLE profile_versions (
    id            {{.ID}},
    portfolio_id  TEXT NOT NULL REFERENCES portfolios (id),
    mga           TEXT NOT NULL,
    profile       TEXT NOT NULL,
    day           TEXT NOT NULL,
    version       INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    input_hash    TEXT NOT NULL,
    vals          TEXT NOT NULL,
    received_at   {{.TS}} NOT NULL,
    superseded_at {{.TS}},
    UNIQUE (portfolio_id, mga, profile, day, version)
);
--bun:split
CREATE UNIQUE INDEX profile_versions_current ON profile_versions (portfolio_id, mga, profile, day) WHERE superseded_at IS NULL;
