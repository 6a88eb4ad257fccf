-- The period calculation (Kalkulation) and the Zeitreihen tree: the
-- customer ramp-up snapshots, the activation records of the sum time series,
-- the market prices, the kalkulation read model and the quantities of the
-- schedule messages sent.
--
-- Ramp-up snapshots: one current row (superseded_at NULL), its predecessors
-- kept as history. The entries are kept as one JSON text: a snapshot is only
-- ever read or replaced whole. The unique index over a constant expression
-- allows one current snapshot in all.
CREATE TABLE hochlauf_snapshots (
    id            {{.ID}},
    quelle        TEXT NOT NULL,
    stand         {{.TS}} NOT NULL,
    hash          TEXT NOT NULL,
    key_id        TEXT NOT NULL DEFAULT '',
    entries       TEXT NOT NULL,
    received_at   {{.TS}} NOT NULL,
    superseded_at {{.TS}}
);
--bun:split
CREATE UNIQUE INDEX hochlauf_snapshots_current ON hochlauf_snapshots ((superseded_at IS NULL)) WHERE superseded_at IS NULL;
--bun:split
-- Activation records by origin: source 'import' with key 'import', or
-- 'utilmd' with the EDIFACT file's bucket key; a set is replaced whole.
-- Days are YYYY-MM-DD text like every delivery day of the schema.
CREATE TABLE zeitreihen_aktivierungen (
    id                  {{.ID}},
    source              TEXT NOT NULL,
    source_key          TEXT NOT NULL,
    marktrolle          TEXT NOT NULL,
    netzbetreiber_mp_id TEXT NOT NULL,
    bilanzierungsgebiet TEXT NOT NULL,
    bilanzkreis         TEXT NOT NULL,
    zeitreihentyp       TEXT NOT NULL,
    aktion              TEXT NOT NULL,
    gueltig_ab          TEXT NOT NULL,
    gueltig_bis         TEXT,
    referenz            TEXT NOT NULL DEFAULT '',
    received_at         {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX zeitreihen_aktivierungen_source ON zeitreihen_aktivierungen (source, source_key);
--bun:split
-- Quarter-hour prices (EUR/MWh). start_unix is the UTC start in Unix
-- seconds rather than a timestamp: the calculation keys its prices by that
-- number, an integer compares and indexes the same on both backends (SQLite
-- would keep a timestamp as text), and a year of quarter-hours is written
-- and read without formatting or parsing 35,040 times.
CREATE TABLE market_prices (
    kind        TEXT NOT NULL,
    start_unix  BIGINT NOT NULL,
    minutes     INTEGER NOT NULL,
    price       DOUBLE PRECISION NOT NULL,
    price_long  DOUBLE PRECISION NOT NULL,
    source      TEXT NOT NULL DEFAULT '',
    imported_at {{.TS}} NOT NULL,
    PRIMARY KEY (kind, start_unix)
);
--bun:split
-- The kalkulation read model (see read_models): per run the schedule's
-- quantities and the metered quantity of each portfolio, control area and
-- quarter-hour, and which of the two stands for the customers.
CREATE TABLE kalkulation_rows (
    run_id       BIGINT NOT NULL,
    delivery_day TEXT NOT NULL,
    portfolio_id TEXT NOT NULL,
    control_area TEXT NOT NULL,
    qh           INTEGER NOT NULL,
    ts           {{.TS}} NOT NULL,
    bought_mw    DOUBLE PRECISION NOT NULL,
    sold_mw      DOUBLE PRECISION NOT NULL,
    ist_mw       DOUBLE PRECISION NOT NULL,
    basis        TEXT NOT NULL,
    PRIMARY KEY (run_id, portfolio_id, control_area, qh)
);
--bun:split
CREATE INDEX kalkulation_rows_day ON kalkulation_rows (delivery_day, run_id);
--bun:split
-- The quantities of a schedule message (appendValues: little-endian
-- doubles, MW per quarter-hour), NULL for the messages recorded before.
-- The template's TS names the backend: BYTEA on PostgreSQL, BLOB on SQLite.
ALTER TABLE schedule_messages ADD COLUMN bought_mw {{if eq .TS "TIMESTAMPTZ"}}BYTEA{{else}}BLOB{{end}};
--bun:split
ALTER TABLE schedule_messages ADD COLUMN sold_mw {{if eq .TS "TIMESTAMPTZ"}}BYTEA{{else}}BLOB{{end}};
--bun:split
-- Received UTILMD activation files (55062/55063) indexed before the
-- activation records were kept: an ETag that differs from the bucket's makes
-- the market-communication sync read and index them once more, and that
-- run records their activations.
UPDATE mako_edi_files SET etag = '' WHERE direction = 'in' AND id IN (
    SELECT file_id FROM mako_edi_messages WHERE type = 'UTILMD' AND process_id IN ('55062', '55063'));
