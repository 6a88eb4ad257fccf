ALTER TABLE audit_entries DROP COLUMN request_id;
