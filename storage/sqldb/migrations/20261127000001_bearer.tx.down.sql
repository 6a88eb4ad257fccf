ALTER TABLE audit_entries DROP COLUMN token_client_id;
--bun:split
ALTER TABLE audit_entries DROP COLUMN token_issuer;
--bun:split
DROP TABLE token_clients;
--bun:split
DROP TABLE token_issuers;
