-- Operators send failed and rejected inbox files back into the inbox from
-- the console. retried_at marks a failed or rejected record as sent back:
-- its file's next life is a new record, and a failed record that is not
-- retried keeps the scans off its object (same key and etag).
ALTER TABLE inbox_files ADD COLUMN retried_at {{.TS}};
--bun:split
-- The error of the last attempt that ended without an outcome (a store or
-- the database failing, a bug), so that operators see why a file is stuck
-- or failed. It is a message for operators, without secrets.
ALTER TABLE inbox_files ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
--bun:split
-- A processing row with retry_of holds the inbox key while the rejected
-- file of that record is moved back from rejected/: the scans leave the
-- key alone until the move is done and the record is marked, and a retry
-- interrupted by a crash is finished from this row. It is deleted when the
-- move is done; the file's next life is claimed like any new drop.
ALTER TABLE inbox_files ADD COLUMN retry_of BIGINT;
--bun:split
-- The console lists the records of one state newest first and pages by
-- keyset (id below the last one seen).
CREATE INDEX inbox_files_state_id ON inbox_files (state, id);
--bun:split
-- The console summary and the metrics count the failed and the rejected
-- files finished since a time.
CREATE INDEX inbox_files_state_finished ON inbox_files (state, finished_at);
--bun:split
-- Every claim and every page of the pending listing looks for a failed
-- record of the object that is not retried; there are few, so the index
-- holds only them.
CREATE INDEX inbox_files_failed ON inbox_files (object_key, etag) WHERE state = 'failed' AND retried_at IS NULL;
