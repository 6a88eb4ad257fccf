// Runs SQL statements (a JSON array of strings on stdin) one after the other
// in one in-memory DuckDB and prints, as a JSON array, each one's
// {columns, types, rows, ms}; ms times the statement alone, without node's
// start-up or loading DuckDB. BIGINT and larger integers come out as
// strings, the JSON form of @duckdb/node-api.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const require = createRequire(process.env.SCHEDBRIDGE_DUCKDB_DIR + '/package.json');
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);

const statements = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
let current = 0;
try {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  for (const sql of statements) {
    const t0 = performance.now();
    const reader = await conn.runAndReadAll(sql);
    const ms = performance.now() - t0;
    out.push({
      columns: reader.columnNames(),
      types: reader.columnTypes().map((t) => t.toString()),
      rows: reader.getRowsJson(),
      ms,
    });
    current++;
  }
} catch (e) {
  process.stderr.write(`statement ${current + 1}: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
process.stdout.write(JSON.stringify(out));
