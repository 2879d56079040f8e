// Reads an Arrow IPC stream file with apache-arrow's tableFromIPC (the independent JavaScript reader) and
// prints {schema: [{name, type, nullable}], batches, rows: [{column: value}]} as JSON.
//   node arrow_read.mjs FILE
// Values: bigint → decimal string, typed arrays/Uint8Array → arrays, Date → epoch ms, nested
// rows → objects/arrays; decimals → their unscaled integer as a string.
import { readFileSync } from 'node:fs';
import { tableFromIPC } from 'apache-arrow';

const file = process.argv[2];
if (!file) {
  console.error('usage: node arrow_read.mjs FILE');
  process.exit(2);
}

function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.getTime();
  if (v instanceof Uint8Array) return Array.from(v);
  if (ArrayBuffer.isView(v)) return Array.from(v, plain);
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), plain(x)]));
  if (typeof v === 'object') {
    if (typeof v.toJSON === 'function') return plain(v.toJSON());
    if (typeof v.toArray === 'function') return plain(v.toArray());
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

try {
  const table = tableFromIPC(readFileSync(file));
  const rows = [];
  const batches = table.batches.length;
  for (let i = 0; i < table.numRows; i++) {
    const row = {};
    for (const f of table.schema.fields) row[f.name] = plain(table.getChild(f.name).get(i));
    rows.push(row);
  }
  const schema = table.schema.fields.map((f) => ({ name: f.name, type: String(f.type), nullable: f.nullable }));
  console.log(JSON.stringify({ schema, batches, rows }));
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
}
