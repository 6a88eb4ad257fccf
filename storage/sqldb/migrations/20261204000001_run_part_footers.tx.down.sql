ALTER TABLE run_parts DROP COLUMN footer;
