-- The operator list of the web console under /console/: staff whose
-- e-mail address (lower case, as the portal normalises it) is listed here
-- are operators once they signed in through the OpenID Connect provider.
-- The console asks on every page request, by the primary key. Kept with
-- `schedbridge operator add|remove|list`; removing an operator deletes the
-- row, and the audit trail keeps what the operator did.
CREATE TABLE operators (
    email    TEXT PRIMARY KEY,
    added_at {{.TS}} NOT NULL,
    added_by TEXT NOT NULL
);
