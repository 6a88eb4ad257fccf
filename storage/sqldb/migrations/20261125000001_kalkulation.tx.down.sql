-- The cleared ETags of the UTILMD activation files are not restored: the
-- bucket's ETags are not known here, and a cleared one only makes the sync
-- index the file once more.
ALTER TABLE schedule_messages DROP COLUMN sold_mw;
--bun:split
ALTER TABLE schedule_messages DROP COLUMN bought_mw;
--bun:split
DROP TABLE kalkulation_rows;
--bun:split
DROP TABLE market_prices;
--bun:split
DROP TABLE zeitreihen_aktivierungen;
--bun:split
DROP TABLE hochlauf_snapshots;
