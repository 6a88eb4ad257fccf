-- The Parquet footer of each staged part as its writer wrote it, so that the
-- run's commit registers the part in the lake's table from the footer's
-- statistics without reading it back from the bucket, also when the commit
-- runs after a restart. NULL for parts staged before, whose footers the
-- commit reads.
ALTER TABLE run_parts ADD COLUMN footer {{if eq .TS "TIMESTAMPTZ"}}BYTEA{{else}}BLOB{{end}};
