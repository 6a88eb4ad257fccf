-- The day-ahead pipeline: run records, imported trades (versioned like
-- forecasts), the materialized read models of the last complete run of a
-- stage per delivery day, and the schedule messages sent to the TSOs with
-- their answers. Portfolios gain the exchange balancing group, and events the
-- delivery day they concern.
ALTER TABLE portfolios ADD COLUMN exchange_balancing_group TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE events ADD COLUMN delivery_day TEXT;
--bun:split
CREATE INDEX events_day ON events (delivery_day, id) WHERE delivery_day IS NOT NULL;
--bun:split
CREATE TABLE runs (
    id           {{.ID}},
    parent_id    BIGINT REFERENCES runs (id),
    stage        TEXT NOT NULL,
    delivery_day TEXT NOT NULL,
    status       TEXT NOT NULL,
    triggered_by TEXT NOT NULL DEFAULT '',
    attempt      INTEGER NOT NULL DEFAULT 1,
    started_at   {{.TS}} NOT NULL,
    finished_at  {{.TS}},
    error        TEXT NOT NULL DEFAULT '',
    outputs      TEXT
);
--bun:split
CREATE INDEX runs_day ON runs (delivery_day, stage);
--bun:split
CREATE INDEX runs_parent ON runs (parent_id);
--bun:split
CREATE INDEX runs_running ON runs (status) WHERE status = 'running';
--bun:split
CREATE TABLE trade_versions (
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
CREATE UNIQUE INDEX trade_versions_current ON trade_versions (portfolio_id, delivery_day) WHERE superseded_at IS NULL;
--bun:split
-- The forecast stage reads one day's profiles of a portfolio.
CREATE INDEX profile_versions_day ON profile_versions (portfolio_id, day) WHERE superseded_at IS NULL;
--bun:split
-- read_models points each dataset and delivery day at the run whose rows the
-- read endpoints serve; publishing a run moves the pointer and deletes the
-- rows of the runs before it in one transaction.
CREATE TABLE read_models (
    dataset      TEXT NOT NULL,
    delivery_day TEXT NOT NULL,
    run_id       BIGINT NOT NULL REFERENCES runs (id),
    PRIMARY KEY (dataset, delivery_day)
);
--bun:split
CREATE TABLE position_rows (
    run_id         BIGINT NOT NULL,
    delivery_day   TEXT NOT NULL,
    portfolio_id   TEXT NOT NULL,
    control_area   TEXT NOT NULL,
    qh             INTEGER NOT NULL,
    ts             {{.TS}} NOT NULL,
    consumption_mw DOUBLE PRECISION NOT NULL,
    production_mw  DOUBLE PRECISION NOT NULL,
    net_mw         DOUBLE PRECISION NOT NULL,
    source         TEXT NOT NULL,
    PRIMARY KEY (run_id, portfolio_id, control_area, qh)
);
--bun:split
CREATE INDEX position_rows_day ON position_rows (delivery_day, run_id);
--bun:split
CREATE TABLE open_position_rows (
    run_id       BIGINT NOT NULL,
    delivery_day TEXT NOT NULL,
    portfolio_id TEXT NOT NULL,
    control_area TEXT NOT NULL,
    qh           INTEGER NOT NULL,
    ts           {{.TS}} NOT NULL,
    net_mw       DOUBLE PRECISION NOT NULL,
    bought_mw    DOUBLE PRECISION NOT NULL,
    sold_mw      DOUBLE PRECISION NOT NULL,
    open_mw      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, portfolio_id, control_area, qh)
);
--bun:split
CREATE INDEX open_position_rows_day ON open_position_rows (delivery_day, run_id);
--bun:split
-- One row per version of the schedule message of a portfolio, delivery day
-- and control area. The unique key makes two racing writers of one version
-- collide instead of both sending it.
CREATE TABLE schedule_messages (
    id            {{.ID}},
    portfolio_id  TEXT NOT NULL REFERENCES portfolios (id),
    delivery_day  TEXT NOT NULL,
    control_area  TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    version       INTEGER NOT NULL,
    file_name     TEXT NOT NULL,
    object_key    TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    sender        TEXT NOT NULL,
    receiver      TEXT NOT NULL,
    run_id        BIGINT NOT NULL DEFAULT 0,
    status        TEXT NOT NULL,
    sent_at       {{.TS}} NOT NULL,
    answer_kind   TEXT NOT NULL DEFAULT '',
    answer_at     {{.TS}},
    answer_key    TEXT NOT NULL DEFAULT '',
    answer_detail TEXT NOT NULL DEFAULT '',
    UNIQUE (portfolio_id, delivery_day, control_area, version)
);
--bun:split
CREATE UNIQUE INDEX schedule_messages_message ON schedule_messages (message_id, version);
--bun:split
CREATE INDEX schedule_messages_day ON schedule_messages (delivery_day, portfolio_id);
