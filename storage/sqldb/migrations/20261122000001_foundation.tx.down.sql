DROP TABLE profile_versions;
--bun:split
DROP TABLE metered_versions;
--bun:split
DROP TABLE location_versions;
--bun:split
DROP TABLE forecast_versions;
--bun:split
DROP TABLE audit_entries;
--bun:split
DROP TABLE api_keys;
--bun:split
DROP TABLE portfolios;
