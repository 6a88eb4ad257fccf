-- When each API key was last used, to the minute, so that an operator finds
-- the key of a lost phone (or any key that should have gone quiet) and
-- revokes it. Writes are throttled to one per key and minute, so that data
-- keys in heavy use do not pay a write per request.
ALTER TABLE api_keys ADD COLUMN last_used_at {{.TS}};
