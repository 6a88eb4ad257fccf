UPDATE metered_versions SET input_hash = (SELECT s.input_hash FROM staging_inputs s WHERE s.id = metered_versions.input_id)
WHERE input_id IS NOT NULL;
--bun:split
UPDATE profile_versions SET input_hash = (SELECT s.input_hash FROM staging_inputs s WHERE s.id = profile_versions.input_id)
WHERE input_id IS NOT NULL;
--bun:split
ALTER TABLE profile_versions DROP COLUMN input_id;
--bun:split
ALTER TABLE metered_versions DROP COLUMN input_id;
--bun:split
DROP TABLE staging_inputs;
