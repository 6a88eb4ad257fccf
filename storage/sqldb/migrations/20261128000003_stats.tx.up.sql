-- The metrics count the schedule messages by status on every replica at
-- scrape time. With this index the count reads the index instead of the
-- table (measured at 500,000 messages: 410 -> 43 ms on SQLite, 270 ->
-- 110 ms on PostgreSQL), and the table only grows.
CREATE INDEX schedule_messages_status ON schedule_messages (status);
