-- The employees' self-service portal: the people who can sign in, the
-- employee records HR loads with their compensation, the sessions, magic
-- links and SSO sign-ins in progress, and the absences and certificate
-- requests employees file. Days are YYYY-MM-DD text like every day of the
-- schema, so that a string comparison orders and overlaps them.
--
-- Employee records, keyed by the Personalnummer. entry_date is '' when HR
-- gave none.
CREATE TABLE portal_employees (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    email               TEXT NOT NULL DEFAULT '',
    department          TEXT NOT NULL DEFAULT '',
    position            TEXT NOT NULL DEFAULT '',
    entry_date          TEXT NOT NULL DEFAULT '',
    state               TEXT NOT NULL DEFAULT '',
    weekly_hours        DOUBLE PRECISION NOT NULL DEFAULT 0,
    leave_days_per_year INTEGER NOT NULL DEFAULT 0,
    updated_at          {{.TS}} NOT NULL
);
--bun:split
-- Users: staff sign in through SSO (issuer and subject, NULL until linked),
-- applicants and new hires by magic link to their address. The roles are a
-- JSON array of names. At most one user is linked to an employee record;
-- NULLs do not collide in the unique indexes on either backend.
CREATE TABLE portal_users (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE CHECK (email = lower(email)),
    name        TEXT NOT NULL DEFAULT '',
    roles       TEXT NOT NULL DEFAULT '[]',
    employee_id TEXT UNIQUE REFERENCES portal_employees (id),
    sso_issuer  TEXT,
    sso_subject TEXT,
    magic_link  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  {{.TS}} NOT NULL,
    updated_at  {{.TS}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX portal_users_sso ON portal_users (sso_issuer, sso_subject);
--bun:split
-- Compensation components in the order HR lists them; a set is replaced whole.
CREATE TABLE portal_compensation (
    employee_id  TEXT NOT NULL REFERENCES portal_employees (id),
    ordinal      INTEGER NOT NULL,
    name         TEXT NOT NULL,
    amount_cents BIGINT NOT NULL,
    pay_interval TEXT NOT NULL,
    visibility   TEXT NOT NULL,
    PRIMARY KEY (employee_id, ordinal)
);
--bun:split
-- Sessions by the hash of their id; the CSRF token is kept as a hash too.
CREATE TABLE portal_sessions (
    id_hash      TEXT PRIMARY KEY,
    csrf_hash    TEXT NOT NULL,
    user_id      TEXT NOT NULL REFERENCES portal_users (id) ON DELETE CASCADE,
    method       TEXT NOT NULL,
    client       TEXT NOT NULL,
    created_at   {{.TS}} NOT NULL,
    last_seen_at {{.TS}} NOT NULL,
    expires_at   {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX portal_sessions_user ON portal_sessions (user_id);
--bun:split
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);
--bun:split
-- Magic links by the hash of their code. The index on address and time
-- serves the count of links issued to an address (the rate limit).
CREATE TABLE portal_magic_links (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES portal_users (id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    created_at {{.TS}} NOT NULL,
    expires_at {{.TS}} NOT NULL,
    used_at    {{.TS}}
);
--bun:split
CREATE INDEX portal_magic_links_email ON portal_magic_links (email, created_at);
--bun:split
-- SSO sign-ins in progress by the hash of their state; used once.
CREATE TABLE portal_login_flows (
    state_hash   TEXT PRIMARY KEY,
    browser_hash TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    created_at   {{.TS}} NOT NULL,
    expires_at   {{.TS}} NOT NULL
);
--bun:split
CREATE TABLE portal_leave_requests (
    id           {{.ID}},
    employee_id  TEXT NOT NULL REFERENCES portal_employees (id),
    type         TEXT NOT NULL,
    start_date   TEXT NOT NULL,
    end_date     TEXT NOT NULL,
    working_days INTEGER NOT NULL,
    comment      TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    created_at   {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX portal_leave_requests_employee ON portal_leave_requests (employee_id, start_date);
--bun:split
CREATE TABLE portal_sick_leaves (
    id          {{.ID}},
    employee_id TEXT NOT NULL REFERENCES portal_employees (id),
    start_date  TEXT NOT NULL,
    end_date    TEXT NOT NULL,
    certificate BOOLEAN NOT NULL DEFAULT FALSE,
    comment     TEXT NOT NULL DEFAULT '',
    created_at  {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX portal_sick_leaves_employee ON portal_sick_leaves (employee_id, start_date);
--bun:split
CREATE TABLE portal_certificates (
    id          {{.ID}},
    employee_id TEXT NOT NULL REFERENCES portal_employees (id),
    type        TEXT NOT NULL,
    purpose     TEXT NOT NULL DEFAULT '',
    language    TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  {{.TS}} NOT NULL,
    updated_at  {{.TS}} NOT NULL
);
--bun:split
CREATE INDEX portal_certificates_employee ON portal_certificates (employee_id, created_at);
