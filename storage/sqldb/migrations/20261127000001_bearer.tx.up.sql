-- Machine clients: the OAuth 2.0 authorization servers whose JWT access
-- tokens (RFC 9068) the bridge accepts, and the clients registered per
-- issuer with their scope and portfolio. The url is the exact iss claim;
-- jwks_uri comes from the issuer's discovery document. Removing an issuer
-- or revoking a client keeps the row, so that the audit trail still names
-- what it was.
CREATE TABLE token_issuers (
    url        TEXT PRIMARY KEY,
    audience   TEXT NOT NULL,
    jwks_uri   TEXT NOT NULL,
    created_at {{.TS}} NOT NULL,
    updated_at {{.TS}} NOT NULL,
    removed_at {{.TS}}
);
--bun:split
-- One active registration per issuer and client id; revoked ones stay.
CREATE TABLE token_clients (
    id           TEXT PRIMARY KEY,
    issuer       TEXT NOT NULL REFERENCES token_issuers (url),
    client_id    TEXT NOT NULL,
    scope        TEXT NOT NULL,
    portfolio_id TEXT REFERENCES portfolios (id),
    label        TEXT NOT NULL DEFAULT '',
    created_at   {{.TS}} NOT NULL,
    revoked_at   {{.TS}}
);
--bun:split
CREATE UNIQUE INDEX token_clients_active ON token_clients (issuer, client_id) WHERE revoked_at IS NULL;
--bun:split
-- The audit trail names the issuer and client of token-authenticated
-- requests, as it names the key of the others.
ALTER TABLE audit_entries ADD COLUMN token_issuer TEXT;
--bun:split
ALTER TABLE audit_entries ADD COLUMN token_client_id TEXT;
