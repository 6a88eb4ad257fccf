ALTER TABLE runs DROP COLUMN heartbeat_at;
