DROP TABLE schedule_messages;
--bun:split
DROP TABLE open_position_rows;
--bun:split
DROP TABLE position_rows;
--bun:split
DROP TABLE read_models;
--bun:split
DROP INDEX profile_versions_day;
--bun:split
DROP TABLE trade_versions;
--bun:split
DROP TABLE runs;
--bun:split
DROP INDEX events_day;
--bun:split
ALTER TABLE events DROP COLUMN delivery_day;
--bun:split
ALTER TABLE portfolios DROP COLUMN exchange_balancing_group;
