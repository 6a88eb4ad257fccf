-- The X-Request-ID of each audited request (sent by the client or generated
-- by the API), which the request's log lines carry as well, so that an entry
-- of the trail leads to its log lines and to what the client saw. Entries
-- written before this migration have none.
ALTER TABLE audit_entries ADD COLUMN request_id TEXT;
