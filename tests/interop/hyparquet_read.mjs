// Reads one Parquet file with hyparquet (an independent JavaScript Parquet reader) and prints
// {num_rows, key_value_metadata, schema, rows} as JSON on stdout.
//   node hyparquet_read.mjs FILE
// `schema` lists every column of the file's schema (groups too, not the root) in file order
// with its dotted path, field_id (null when the file has none), physical type, logical or
// converted type (and isAdjustedToUTC of times and timestamps) and repetition. Row values: INT64 → decimal string, DATE → YYYY-MM-DD,
// timestamps → ISO 8601 UTC with microseconds, BYTE_ARRAY without a string type → hex.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

const file = process.argv[2];
if (!file) {
  console.error('usage: node hyparquet_read.mjs FILE');
  process.exit(2);
}

function pad(n, width) {
  return String(n).padStart(width, '0');
}

function isoDate(days) {
  const d = new Date(Number(days) * 86400000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
}

// ISO 8601 UTC of a count of `unitsPerSecond` since the epoch, keeping every digit.
function isoTimestamp(units, unitsPerSecond, digits) {
  const u = BigInt(units);
  const per = BigInt(unitsPerSecond);
  let seconds = u / per;
  let frac = u % per;
  if (frac < 0n) {
    frac += per;
    seconds -= 1n;
  }
  const whole = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return `${whole}.${pad(frac, digits)}Z`;
}

const parsers = {
  timestampFromMilliseconds: (v) => isoTimestamp(v, 1000, 3),
  timestampFromMicroseconds: (v) => isoTimestamp(v, 1000000, 6),
  timestampFromNanoseconds: (v) => isoTimestamp(v, 1000000000, 9),
  dateFromDays: (v) => isoDate(v),
  stringFromBytes: (b) => (b === undefined || b === null ? b : new TextDecoder().decode(b)),
};

try {
  const buffer = await asyncBufferFromFile(file);
  const metadata = await parquetMetadataAsync(buffer);

  // The flat schema list in depth-first order; element 0 is the root.
  const schema = [];
  let index = 1;
  function walk(prefix, count) {
    for (let i = 0; i < count; i++) {
      const e = metadata.schema[index++];
      const p = prefix ? `${prefix}.${e.name}` : e.name;
      schema.push({
        path: p,
        name: e.name,
        field_id: e.field_id ?? null,
        type: e.type ?? null,
        logical_type: e.logical_type?.type ?? null,
        adjusted_to_utc: e.logical_type?.isAdjustedToUTC ?? null,
        converted_type: e.converted_type ?? null,
        repetition: e.repetition_type ?? null,
        scale: e.scale ?? null,
        precision: e.precision ?? null,
      });
      if (e.num_children) walk(p, e.num_children);
    }
  }
  walk('', metadata.schema[0].num_children ?? 0);

  const kv = {};
  for (const { key, value } of metadata.key_value_metadata ?? []) kv[key] = value ?? null;

  const rows = await parquetReadObjects({ file: buffer, metadata, compressors, parsers, utf8: true });
  const text = JSON.stringify(
    { num_rows: metadata.num_rows, key_value_metadata: kv, schema, rows },
    (key, value) => {
      if (typeof value === 'bigint') return value.toString();
      if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
      if (value && value.type === 'Buffer' && Array.isArray(value.data)) {
        return Buffer.from(value.data).toString('hex');
      }
      return value;
    },
  );
  process.stdout.write(text + '\n');
} catch (err) {
  console.error(`hyparquet_read: ${file}: ${err.stack ?? err.message}`);
  process.exit(1);
}
