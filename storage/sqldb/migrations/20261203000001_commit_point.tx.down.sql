DROP INDEX schedule_messages_undelivered;
--bun:split
ALTER TABLE schedule_messages DROP COLUMN delivered_at;
--bun:split
ALTER TABLE schedule_messages DROP COLUMN document;
--bun:split
DROP TABLE run_parts;
