DROP TABLE events;
--bun:split
DROP TABLE inbox_files;
