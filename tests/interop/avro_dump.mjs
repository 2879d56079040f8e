// Reads an Avro object container file with avsc (an independent Avro implementation) and
// prints {metadata, schema, codec, records} as JSON on stdout. Longs are decoded as BigInt
// (printed as strings) so 64-bit ids survive; bytes/fixed are printed as hex.
//   node avro_dump.mjs FILE
import avro from 'avsc';

const file = process.argv[2];
if (!file) {
  console.error('usage: node avro_dump.mjs FILE');
  process.exit(2);
}

const BigLong = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(n));
    return b;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
});

const out = { metadata: {}, schema: null, codec: null, records: [] };
const decoder = avro.createFileDecoder(file, {
  parseHook: (schema) => {
    out.schema = schema;
    return avro.Type.forSchema(schema, { registry: { long: BigLong } });
  },
});
decoder.on('metadata', (type, codec, header) => {
  out.codec = codec;
  for (const [k, v] of Object.entries(header.meta)) out.metadata[k] = v.toString();
});
decoder.on('data', (record) => out.records.push(record));
decoder.on('error', (err) => {
  console.error(`avro_dump: ${file}: ${err.message}`);
  process.exit(1);
});
decoder.on('end', () => {
  const text = JSON.stringify(out, (key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (value && value.type === 'Buffer' && Array.isArray(value.data)) {
      return Buffer.from(value.data).toString('hex');
    }
    return value;
  });
  process.stdout.write(text + '\n');
});
