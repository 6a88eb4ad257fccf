-- A bulk file's metered or profile days share one input hash, which is known
-- only once the whole file is read. The versions staged from such a file
-- name the file's row in staging_inputs (input_id) and leave input_hash
-- empty; the row gets its hash when the file's staging commits. The inbox
-- can then stage a file while it reads it, in one pass, instead of reading
-- it once to validate and hash and again to stage (issue 20). Versions
-- staged through the API keep their hash in input_hash, with no input_id.
--
-- input_id has no foreign key: the check cost PostgreSQL 3.6 us per staged
-- day, a sixth of the bulk write. Its row is written in the same
-- transaction as the versions and is never deleted.
CREATE TABLE staging_inputs (
    id         {{.ID}},
    input_hash TEXT NOT NULL
);
--bun:split
ALTER TABLE metered_versions ADD COLUMN input_id BIGINT;
--bun:split
ALTER TABLE profile_versions ADD COLUMN input_id BIGINT;
