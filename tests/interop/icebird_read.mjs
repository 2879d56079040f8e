// Reads an Iceberg table with icebird (an independent JavaScript reader built on hyparquet)
// from local disk and prints {location, rows, fetched} as JSON on stdout.
//   node icebird_read.mjs TABLE_DIR METADATA_FILE
// icebird fetches every file by the absolute location recorded in the metadata, so
// globalThis.fetch is replaced by a responder that maps the table's recorded location prefix
// to TABLE_DIR and answers HEAD (size) and `Range: bytes=a-b` GETs from the file. A request
// outside that prefix is an error: it would mean the table points at files it does not own.
// Values are printed by their Iceberg type so they compare exactly: long → decimal string,
// date → YYYY-MM-DD, timestamp(tz) → ISO 8601 UTC with milliseconds (icebird's precision),
// decimal(p, s) → fixed string with s digits, binary/fixed → hex, list → array,
// struct → object by Iceberg field name.
import { promises as fs } from 'fs';
import path from 'path';
import { icebergMetadata, icebergRead } from 'icebird';

const [tableDir, metadataFile] = process.argv.slice(2);
if (!tableDir || !metadataFile) {
  console.error('usage: node icebird_read.mjs TABLE_DIR METADATA_FILE');
  process.exit(2);
}

function die(message) {
  console.error(`icebird_read: ${message}`);
  process.exit(1);
}

const localMetadata = JSON.parse(await fs.readFile(metadataFile, 'utf8'));
const location = String(localMetadata.location ?? '').replace(/\/+$/, '');
if (!location) die(`${metadataFile}: no "location"`);
const localRoot = path.resolve(tableDir);

const fetched = [];

// The local file behind a URL under the recorded location, or an error.
function localPathOf(url) {
  if (url !== location && !url.startsWith(location + '/')) {
    throw new Error(`request outside the table location ${location}: ${url}`);
  }
  const rest = decodeURIComponent(url.slice(location.length));
  const resolved = path.resolve(localRoot, '.' + rest);
  if (resolved !== localRoot && !resolved.startsWith(localRoot + path.sep)) {
    throw new Error(`request escapes the table folder: ${url}`);
  }
  return resolved;
}

globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const method = String(init.method ?? (typeof input === 'object' ? input.method : undefined) ?? 'GET').toUpperCase();
  const file = localPathOf(url);
  let size;
  try {
    size = (await fs.stat(file)).size;
  } catch {
    return new Response(null, { status: 404, statusText: 'Not Found' });
  }
  fetched.push(file);
  if (method === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'content-length': String(size) } });
  }
  const range = new Headers(init.headers).get('range');
  if (range) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range.trim());
    if (!m) return new Response(null, { status: 416, statusText: 'Range Not Satisfiable' });
    const start = Number(m[1]);
    const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start > end || start >= size) {
      return new Response(null, { status: 416, statusText: 'Range Not Satisfiable' });
    }
    const handle = await fs.open(file, 'r');
    try {
      const body = Buffer.alloc(end - start + 1);
      const { bytesRead } = await handle.read(body, 0, body.length, start);
      if (bytesRead !== body.length) throw new Error(`short read of ${file}`);
      return new Response(body, {
        status: 206,
        headers: {
          'content-length': String(body.length),
          'content-range': `bytes ${start}-${end}/${size}`,
        },
      });
    } finally {
      await handle.close();
    }
  }
  const body = await fs.readFile(file);
  return new Response(body, { status: 200, headers: { 'content-length': String(size) } });
};

function pad(n, width) {
  return String(n).padStart(width, '0');
}

// Formats one value by its Iceberg type (a string like "long" or a nested type object).
function formatValue(value, type) {
  if (value === undefined || value === null) return null;
  if (typeof type === 'object') {
    if (type.type === 'list') {
      return Array.from(value, (v) => formatValue(v, type.element));
    }
    if (type.type === 'struct') {
      const out = {};
      for (const f of type.fields) out[f.name] = formatValue(value[f.name], f.type);
      return out;
    }
    if (type.type === 'map') {
      const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
      return entries.map(([k, v]) => ({ key: formatValue(k, type.key), value: formatValue(v, type.value) }));
    }
    throw new Error(`unsupported nested type ${JSON.stringify(type)}`);
  }
  if (type === 'long') return typeof value === 'bigint' ? value.toString() : String(value);
  if (type === 'int' || type === 'float' || type === 'double' || type === 'boolean' || type === 'string') {
    return typeof value === 'bigint' ? value.toString() : value;
  }
  if (type === 'date') {
    const d = value instanceof Date ? value : new Date(Number(value) * 86400000);
    return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
  }
  if (type.startsWith('timestamp')) {
    if (!(value instanceof Date)) throw new Error(`timestamp value is not a Date: ${value}`);
    return value.toISOString();
  }
  const decimal = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(type);
  if (decimal) return Number(value).toFixed(Number(decimal[2]));
  if (type === 'binary' || type.startsWith('fixed')) return Buffer.from(value).toString('hex');
  if (typeof value === 'bigint') return value.toString();
  return value;
}

let metadata = localMetadata;
// Metadata under TABLE_DIR/metadata is fetched by icebird itself, like any other reader would.
if (path.resolve(path.dirname(metadataFile)) === path.join(localRoot, 'metadata')) {
  try {
    metadata = await icebergMetadata({ tableUrl: location, metadataFileName: path.basename(metadataFile) });
  } catch (err) {
    die(err.message);
  }
}

// Format v1 metadata may carry a single `schema` instead of `schemas`.
const schema =
  (metadata.schemas ?? []).find((s) => s['schema-id'] === metadata['current-schema-id']) ?? metadata.schema;
if (!schema) die('current schema not found');

let rows = [];
const snapshotId = metadata['current-snapshot-id'];
if (snapshotId !== undefined && snapshotId !== null && snapshotId >= 0) {
  try {
    rows = await icebergRead({ tableUrl: location, metadata });
  } catch (err) {
    // A table whose current snapshot holds no data files is empty, not broken.
    if (!/No data manifest files found/.test(err.message)) die(err.stack ?? err.message);
  }
}

const out = {
  location,
  rows: rows.map((row) => {
    const r = {};
    for (const f of schema.fields) r[f.name] = formatValue(row[f.name], f.type);
    return r;
  }),
  fetched: [...new Set(fetched)].map((f) => path.relative(localRoot, f)).sort(),
};
process.stdout.write(JSON.stringify(out) + '\n');
