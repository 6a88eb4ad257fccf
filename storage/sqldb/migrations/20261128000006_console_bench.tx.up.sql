-- The console's summary and schedules read the TSO answers of one delivery
-- day: events of one kind and day, in id order. SQLite, which has no
-- statistics unless ANALYZE ran, took events_kind_id for that and read every
-- answer of every day (5 ms at a year of events, growing with the feed);
-- with both columns in one index it reads the day's answers only.
CREATE INDEX events_kind_day ON events (kind, delivery_day, id) WHERE delivery_day IS NOT NULL;
--bun:split
-- The market-partner overview keeps its facts in memory while the tables
-- behind them are unchanged (storage/sqldb/mako_cache.go). Each writer of
-- those tables (registry imports, EDIFACT and mail indexing) counts its
-- writes here in the writing transaction, so that every process sees a
-- write when it commits; one row per writer keeps them from queueing on one.
CREATE TABLE mako_versions (
    writer  TEXT PRIMARY KEY,
    version BIGINT NOT NULL
);
--bun:split
INSERT INTO mako_versions (writer, version) VALUES ('registry', 0), ('edifact', 0), ('mail', 0);
--bun:split
-- The overview reads the newest message per partner and stream. Probing the
-- message and file tables once per entry of mako_edi_latest took 60-90 ms at
-- 900 DSOs and a year of messages scattered over the tables; each entry now
-- keeps a copy of the columns the overview shows, written by the indexing
-- transaction (copyLatestColumns), and found by message when an answer
-- changes the verdict of a message that is the newest of its stream.
ALTER TABLE mako_edi_latest ADD COLUMN object_key TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN direction TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN type TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN process_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN bgm TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN document_no TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN interchange_ref TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN message_ref TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN message_stream TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN verdict TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE mako_edi_latest ADD COLUMN answered_at {{.TS}};
--bun:split
CREATE INDEX mako_edi_latest_message ON mako_edi_latest (message_id);
--bun:split
UPDATE mako_edi_latest SET (object_key, direction, type, process_id, bgm, document_no, interchange_ref, message_ref,
    message_stream, verdict, answered_at) = (SELECT f.object_key, m.direction, m.type, m.process_id, m.bgm, m.document_no,
    m.interchange_ref, m.message_ref, m.stream, m.verdict, m.answered_at
    FROM mako_edi_messages m JOIN mako_edi_files f ON f.id = m.file_id WHERE m.id = mako_edi_latest.message_id);
