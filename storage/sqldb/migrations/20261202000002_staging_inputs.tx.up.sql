-- A bulk file's metered or profile days share one input hash, which is known
-- only once the whole file is read. The versions staged from such a file
-- name the file's row in staging_inputs (input_id) and leave input_hash
-- empty; the row gets its hash when the file's staging commits. The inbox
-- can then stage a file while it reads it, in one pass, instead of reading
-- it once to validate and hash and again to stage (issue 20). Versions
-- staged through the API keep their hash in input_hash, with no input_id.
--
-- input_id has no foreign key: PostgreSQL checks a key per row, which for
-- the portfolio's key took 5.3 s of a 1,000,000-day file (see
-- 20261202000003). Its row is written in the same transaction as the
-- versions and is never deleted.
CREATE TABLE staging_inputs (
    id         {{.ID}},
    input_hash TEXT NOT NULL
);
--bun:split
ALTER TABLE metered_versions ADD COLUMN input_id BIGINT;
--bun:split
ALTER TABLE profile_versions ADD COLUMN input_id BIGINT;
