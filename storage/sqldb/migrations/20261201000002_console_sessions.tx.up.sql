-- The operators' web console signs staff in through the portal's single
-- sign-on. A session remembers whether the identity provider asserted an
-- operator group at that sign-in, and a sign-in in progress remembers the
-- page it returns to (a portal or a console page).
ALTER TABLE portal_sessions ADD COLUMN operator_claim BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
ALTER TABLE portal_login_flows ADD COLUMN next_path TEXT NOT NULL DEFAULT '';
--bun:split
-- The operators' actions (start, retry, inbox retry, Nachversand delete) are
-- in the audit trail; an action taken in the web console names its operator.
ALTER TABLE audit_entries ADD COLUMN operator TEXT;
