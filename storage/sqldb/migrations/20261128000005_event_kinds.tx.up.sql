-- The operators' app pages through the alerts of the console feed (failed
-- runs, rejected files, TSO answers) newest first; with a year of events,
-- reading them by kind must not scan the whole table.
CREATE INDEX events_kind_id ON events (kind, id);
