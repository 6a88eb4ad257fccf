// Lists the live data files of one snapshot of an Apache Iceberg table, as a
// reader independent of iceberg-go: it parses the table's metadata.json
// itself and reads the manifest list and the manifests (Avro container
// files, deflate-coded by iceberg-go) with npm avsc. Input on stdin: {"metadata":
// path of a local metadata.json, "snapshot": id or 0 for the current one}.
// Output: {snapshot, summary, files: [{path, records, partition}]}.
// Paths keep their URI as the manifest records it; a local path's file://
// prefix is for the caller to strip.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const require = createRequire(process.env.SCHEDBRIDGE_DUCKDB_DIR + '/package.json');
const avro = require('avsc');

const input = JSON.parse(readFileSync(0, 'utf8'));
// Snapshot ids use all 64 bits, beyond what a JavaScript number holds
// exactly: long integers are read as strings.
const meta = JSON.parse(readFileSync(input.metadata, 'utf8').replace(/(:\s*)(-?\d{16,})/g, '$1"$2"'));
const id = String(input.snapshot || meta['current-snapshot-id']);
const snap = (meta.snapshots ?? []).find((s) => String(s['snapshot-id']) === id);
if (!snap) {
  process.stderr.write(`snapshot ${id} not in ${input.metadata}`);
  process.exit(1);
}

function localPath(uri) {
  return uri.startsWith('file:') ? fileURLToPath(uri) : uri;
}

// avsc's codecs take (buffer, callback); iceberg-go writes deflate as raw
// deflate, as the Avro specification asks.
const codecs = { deflate: (buf, cb) => zlib.inflateRaw(buf, cb), null: (buf, cb) => cb(null, buf) };

// Avro longs as BigInt: snapshot ids and sequence numbers use all 64 bits.
const longType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
const parseHook = (schema) => avro.Type.forSchema(schema, { registry: { long: longType } });

function readAvro(path) {
  return new Promise((resolve, reject) => {
    const rows = [];
    avro.createFileDecoder(localPath(path), { codecs, parseHook })
      .on('data', (r) => rows.push(r))
      .on('end', () => resolve(rows))
      .on('error', reject);
  });
}

const files = [];
for (const m of await readAvro(snap['manifest-list'])) {
  if ((m.content ?? 0) !== 0) continue; // delete manifests: none are written
  for (const e of await readAvro(m.manifest_path)) {
    if (e.status === 2) continue; // DELETED entries are not live
    const df = e.data_file;
    const partition = {};
    for (const [k, v] of Object.entries(df.partition ?? {})) {
      partition[k] = v && typeof v === 'object' && 'int' in v ? v.int : v;
    }
    files.push({ path: df.file_path, records: Number(df.record_count), partition });
  }
}
files.sort((a, b) => (a.path < b.path ? -1 : 1));
process.stdout.write(JSON.stringify({
  snapshot: String(snap['snapshot-id']),
  summary: snap.summary ?? {},
  files,
}));
