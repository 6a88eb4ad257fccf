ALTER TABLE audit_entries DROP COLUMN operator;
--bun:split
ALTER TABLE portal_login_flows DROP COLUMN next_path;
--bun:split
ALTER TABLE portal_sessions DROP COLUMN operator_claim;
