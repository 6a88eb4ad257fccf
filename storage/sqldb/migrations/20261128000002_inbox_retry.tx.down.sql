-- A retry claim is only a lock of its key: without it the file is where the
-- interrupted retry left it, in rejected/ or back in the inbox, and the
-- scans of the earlier schema take it from there. Failed records stay: to
-- the earlier code they are closed rows it lists, and it claims their files
-- again as new lives.
DELETE FROM inbox_files WHERE retry_of IS NOT NULL AND state = 'processing';
--bun:split
DROP INDEX inbox_files_failed;
--bun:split
DROP INDEX inbox_files_state_finished;
--bun:split
DROP INDEX inbox_files_state_id;
--bun:split
ALTER TABLE inbox_files DROP COLUMN retry_of;
--bun:split
ALTER TABLE inbox_files DROP COLUMN last_error;
--bun:split
ALTER TABLE inbox_files DROP COLUMN retried_at;
