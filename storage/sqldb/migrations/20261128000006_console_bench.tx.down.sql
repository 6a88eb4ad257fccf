DROP INDEX mako_edi_latest_message;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN answered_at;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN verdict;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN message_stream;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN message_ref;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN interchange_ref;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN document_no;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN bgm;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN process_id;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN type;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN direction;
--bun:split
ALTER TABLE mako_edi_latest DROP COLUMN object_key;
--bun:split
DROP TABLE mako_versions;
--bun:split
DROP INDEX events_kind_day;
