// A small Arrow Flight SQL client built only from other projects' code: @grpc/grpc-js for gRPC,
// @grpc/proto-loader (and the protobufjs it loads with) for skade's .proto files, apache-arrow for
// Arrow IPC. Used by flightsql_test.mjs against a live `skade serve`.
//
//   const client = await FlightSqlClient.connect({ address, protoDir, rootCert });
//   await client.handshake('alice', 'secret');          // basic auth → bearer token
//   const { info, table } = await client.query('CommandStatementQuery', { query: 'SELECT 1' });
//
// Commands are google.protobuf.Any messages (type_url type.googleapis.com/<full name>). DoGet
// results are decoded by rebuilding encapsulated Arrow IPC messages from FlightData
// (data_header = Message flatbuffer, data_body = body) and reading them with apache-arrow.
// Session cookies (set-cookie in response metadata) are sent back as `cookie` on later calls.
// Failed calls reject with the grpc-js error (e.code is the gRPC status code, e.details the text).
import fs from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { RecordBatch, RecordBatchReader, Struct, makeData, tableFromIPC, tableToIPC, Table, Schema } from 'apache-arrow';

export const SQL_PACKAGE = 'arrow.flight.protocol.sql';
export const FLIGHT_PACKAGE = 'arrow.flight.protocol';
export const TYPE_URL_PREFIX = 'type.googleapis.com/';
export const Status = grpc.status;

// The include folders for skade's protos: their own folder and the system protobuf imports.
function includeDirs(protoDir) {
  return [protoDir, '/usr/include'];
}

// Loads flight.proto and flight_sql.proto twice: with proto-loader for the grpc-js service, and
// with protobufjs for the command messages proto-loader doesn't expose.
export function loadProtocol(protoDir) {
  const files = ['flight.proto', 'flight_sql.proto', 'google/protobuf/any.proto'];
  const definition = protoLoader.loadSync(files, {
    keepCase: true,
    longs: String,
    enums: Number,
    bytes: Buffer,
    defaults: true,
    oneofs: true,
    includeDirs: includeDirs(protoDir),
  });
  const grpcObject = grpc.loadPackageDefinition(definition);
  const FlightService = grpcObject.arrow.flight.protocol.FlightService;

  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => {
    if (path.isAbsolute(target)) return target;
    for (const dir of includeDirs(protoDir)) {
      const candidate = path.join(dir, target);
      if (fs.existsSync(candidate)) return candidate;
    }
    return target;
  };
  root.loadSync(files, { keepCase: true });
  root.resolveAll();
  return { FlightService, root };
}

const TO_OBJECT = { longs: String, enums: Number, bytes: Buffer, defaults: true, oneofs: true };

// ---- protobuf helpers ----

export class Protocol {
  constructor(root) {
    this.root = root;
  }

  type(name) {
    const full = name.includes('.') ? name : `${SQL_PACKAGE}.${name}`;
    return this.root.lookupType(full);
  }

  // Encodes message `name` (short names are Flight SQL messages) from a plain object.
  encode(name, object) {
    const t = this.type(name);
    return Buffer.from(t.encode(t.fromObject(object)).finish());
  }

  // Decodes bytes as message `name` into a plain object (longs as strings, bytes as Buffer).
  decode(name, bytes) {
    const t = this.type(name);
    return t.toObject(t.decode(bytes), TO_OBJECT);
  }

  // google.protobuf.Any bytes wrapping message `name`.
  pack(name, object) {
    const full = name.includes('.') ? name : `${SQL_PACKAGE}.${name}`;
    return this.packRaw(TYPE_URL_PREFIX + full, this.encode(full, object));
  }

  // google.protobuf.Any bytes with any type_url and value bytes.
  packRaw(typeUrl, value) {
    return this.encode('google.protobuf.Any', { type_url: typeUrl, value: Buffer.from(value) });
  }

  // Unpacks Any bytes that must hold message `name`; throws on another type.
  unpack(name, bytes) {
    const full = name.includes('.') ? name : `${SQL_PACKAGE}.${name}`;
    const any = this.decode('google.protobuf.Any', bytes);
    if (any.type_url !== TYPE_URL_PREFIX + full) {
      throw new Error(`expected Any of ${full}, got ${any.type_url}`);
    }
    return this.decode(full, any.value);
  }
}

// ---- Arrow IPC framing ----

const CONTINUATION = 0xffffffff;

// Reads the Message flatbuffer's header type (slot 1) and bodyLength (slot 3) — the two fields
// the framing needs — straight from the flatbuffer tables.
export function messageInfo(header) {
  const buf = Buffer.from(header.buffer, header.byteOffset, header.byteLength);
  if (buf.length < 8) throw new Error(`IPC message header of ${buf.length} bytes`);
  const table = buf.readUInt32LE(0);
  if (table + 4 > buf.length) throw new Error('IPC message header: root offset out of range');
  const vtable = table - buf.readInt32LE(table);
  if (vtable < 0 || vtable + 4 > buf.length) throw new Error('IPC message header: bad vtable');
  const vtableSize = buf.readUInt16LE(vtable);
  const slot = (i) => (4 + 2 * i < vtableSize ? buf.readUInt16LE(vtable + 4 + 2 * i) : 0);
  const typeAt = slot(1);
  const lengthAt = slot(3);
  return {
    headerType: typeAt ? buf.readUInt8(table + typeAt) : 0,
    bodyLength: lengthAt ? Number(buf.readBigInt64LE(table + lengthAt)) : 0,
  };
}

export const MessageHeaderType = { Schema: 1, DictionaryBatch: 2, RecordBatch: 3 };

// One encapsulated IPC message: continuation marker, padded metadata length, the flatbuffer
// padded to 8 bytes, then the body.
function encapsulate(header, body) {
  const padded = (header.length + 7) & ~7;
  const out = Buffer.alloc(8 + padded + body.length);
  out.writeUInt32LE(CONTINUATION, 0);
  out.writeInt32LE(padded, 4);
  Buffer.from(header).copy(out, 8);
  Buffer.from(body).copy(out, 8 + padded);
  return out;
}

const END_OF_STREAM = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

// The IPC stream bytes for FlightData messages (those without a data_header carry only
// app_metadata and are skipped). Throws when a body is shorter than its bodyLength.
export function ipcStreamFromFlightData(messages) {
  const parts = [];
  for (const m of messages) {
    if (!m.data_header || m.data_header.length === 0) continue;
    const { bodyLength } = messageInfo(m.data_header);
    const body = m.data_body ?? Buffer.alloc(0);
    if (body.length < bodyLength) {
      throw new Error(`FlightData body of ${body.length} bytes, message says ${bodyLength}`);
    }
    parts.push(encapsulate(m.data_header, body.subarray(0, bodyLength)));
  }
  parts.push(END_OF_STREAM);
  return Buffer.concat(parts);
}

// Splits an IPC stream (as tableToIPC writes it) into {header, body} messages.
export function splitIpcStream(bytes) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = [];
  let pos = 0;
  while (pos + 4 <= buf.length) {
    let length = buf.readUInt32LE(pos);
    pos += 4;
    if (length === CONTINUATION) {
      length = buf.readInt32LE(pos);
      pos += 4;
    }
    if (length === 0) break;
    const header = buf.subarray(pos, pos + length);
    pos += length;
    const { bodyLength } = messageInfo(header);
    out.push({ header: Buffer.from(header), body: Buffer.from(buf.subarray(pos, pos + bodyLength)) });
    pos += bodyLength;
  }
  return out;
}

// An Arrow Schema from an encapsulated IPC Schema message (FlightInfo.schema,
// SchemaResult.schema, table_schema, dataset/parameter schemas). Accepts the message with or
// without the continuation marker. Empty bytes give null.
export function schemaFromIpcMessage(bytes) {
  if (!bytes || bytes.length === 0) return null;
  const buf = Buffer.from(bytes);
  let offset = 0;
  let length = buf.readUInt32LE(0);
  if (length === CONTINUATION) {
    length = buf.readInt32LE(4);
    offset = 8;
  } else {
    offset = 4;
  }
  if (offset + length > buf.length) {
    throw new Error(`schema message of ${length} bytes in ${buf.length} bytes`);
  }
  const header = buf.subarray(offset, offset + length);
  const { headerType } = messageInfo(header);
  if (headerType !== MessageHeaderType.Schema) {
    throw new Error(`expected a Schema message, header type ${headerType}`);
  }
  const reader = RecordBatchReader.from(Buffer.concat([encapsulate(header, Buffer.alloc(0)), END_OF_STREAM]));
  reader.open();
  return reader.schema;
}

// The IPC messages ({header, body}) of `table` as a stream: its schema, then its record batches
// (what DoPut sends, one FlightData each).
export function ipcMessagesOf(table) {
  return splitIpcStream(tableToIPC(table, 'stream'));
}

// ---- cookies ----

// Parses set-cookie values into updates of `jar` (a Map name → value); Max-Age=0 or an Expires
// in the past removes the cookie.
function applySetCookie(jar, values) {
  for (const raw of values) {
    const parts = String(raw).split(';').map((s) => s.trim());
    const eq = parts[0].indexOf('=');
    if (eq <= 0) continue;
    const name = parts[0].slice(0, eq);
    const value = parts[0].slice(eq + 1);
    let expired = false;
    for (const attr of parts.slice(1)) {
      const [k, v] = attr.split('=');
      if (/^max-age$/i.test(k) && Number(v) <= 0) expired = true;
      if (/^expires$/i.test(k) && Date.parse(v) < Date.now()) expired = true;
    }
    if (expired) jar.delete(name);
    else jar.set(name, value);
  }
}

// ---- the client ----

export class FlightSqlClient {
  // address "host:port"; rootCert: PEM file for TLS (omit for plaintext); deadlineMs per call.
  // cookies: false behaves like ADBC (by default), pyarrow and Arrow C++ clients: set-cookie is
  // ignored and no cookie is ever sent.
  static connect({ address, protoDir, rootCert = null, deadlineMs = 20000, channelOptions = {}, cookies = true }) {
    const { FlightService, root } = loadProtocol(protoDir);
    const creds = rootCert
      ? grpc.credentials.createSsl(fs.readFileSync(rootCert))
      : grpc.credentials.createInsecure();
    const stub = new FlightService(address, creds, {
      'grpc.max_receive_message_length': 256 * 1024 * 1024,
      'grpc.max_send_message_length': 256 * 1024 * 1024,
      ...channelOptions,
    });
    const client = new FlightSqlClient(stub, new Protocol(root), deadlineMs);
    client.useCookies = cookies;
    return client;
  }

  constructor(stub, proto, deadlineMs) {
    this.stub = stub;
    this.proto = proto;
    this.deadlineMs = deadlineMs;
    this.cookies = new Map(); // name → value, sent as one `cookie` header
    this.useCookies = true;
    this.authorization = null; // "Bearer <token>" once authenticated
    this.headersSeen = []; // initial metadata of each call, for tests that inspect it
  }

  close() {
    this.stub.close();
  }

  // A copy of this client's state on the same channel, e.g. to send a stale cookie.
  clone() {
    const c = new FlightSqlClient(this.stub, this.proto, this.deadlineMs);
    c.cookies = new Map(this.cookies);
    c.useCookies = this.useCookies;
    c.authorization = this.authorization;
    return c;
  }

  sessionCookie() {
    return this.cookies.get('arrow_flight_session_id') ?? null;
  }

  metadata(extra = {}) {
    const md = new grpc.Metadata();
    if (this.authorization) md.set('authorization', this.authorization);
    if (this.cookies.size > 0) {
      md.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    }
    for (const [k, v] of Object.entries(extra)) md.set(k, v);
    return md;
  }

  options() {
    return { deadline: new Date(Date.now() + this.deadlineMs) };
  }

  // Watches a call's initial and trailing metadata for cookies (trailers-only error responses
  // carry the headers in the trailers).
  track(call) {
    call.on('metadata', (md) => {
      this.headersSeen.push(md);
      if (this.useCookies) applySetCookie(this.cookies, md.get('set-cookie'));
    });
    call.on('status', (s) => {
      if (this.useCookies && s && s.metadata) applySetCookie(this.cookies, s.metadata.get('set-cookie'));
    });
    return call;
  }

  unary(method, request) {
    return new Promise((resolve, reject) => {
      const call = this.stub[method](request, this.metadata(), this.options(), (err, res) =>
        err ? reject(err) : resolve(res),
      );
      this.track(call);
    });
  }

  serverStream(method, request) {
    return new Promise((resolve, reject) => {
      const items = [];
      const call = this.track(this.stub[method](request, this.metadata(), this.options()));
      call.on('data', (m) => items.push(m));
      call.on('error', reject);
      call.on('end', () => resolve(items));
    });
  }

  // Runs a bidirectional call: writes `requests`, half-closes, collects the responses.
  // Resolves {responses, headers} where headers is the response's initial metadata.
  bidi(method, requests, extraHeaders = {}) {
    return new Promise((resolve, reject) => {
      const responses = [];
      let headers = null;
      const call = this.track(this.stub[method](this.metadata(extraHeaders), this.options()));
      call.on('metadata', (md) => (headers = md));
      call.on('data', (m) => responses.push(m));
      call.on('error', reject);
      call.on('end', () => resolve({ responses, headers }));
      for (const r of requests) call.write(r);
      call.end();
    });
  }

  // ---- Flight RPCs ----

  // Basic-auth Handshake: sends `authorization: Basic base64(user:password)` and no messages,
  // takes the bearer token from the response header. Resolves {token, headers}.
  async handshake(user, password) {
    const basic = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
    const saved = this.authorization;
    this.authorization = null;
    try {
      const { headers } = await this.bidi('Handshake', [], { authorization: basic });
      const value = headers ? headers.get('authorization')[0] : undefined;
      if (typeof value !== 'string' || !/^Bearer /i.test(value)) {
        throw new Error(`Handshake response has no "authorization: Bearer" header (got ${value})`);
      }
      this.authorization = value;
      return { token: value.replace(/^Bearer /i, ''), headers };
    } catch (e) {
      this.authorization = saved;
      throw e;
    }
  }

  descriptor(cmdBytes) {
    return { type: 2, cmd: Buffer.from(cmdBytes), path: [] };
  }

  getFlightInfoRaw(cmdBytes) {
    return this.unary('GetFlightInfo', this.descriptor(cmdBytes));
  }

  getFlightInfo(command, object = {}) {
    return this.getFlightInfoRaw(this.proto.pack(command, object));
  }

  async getSchemaRaw(cmdBytes) {
    const res = await this.unary('GetSchema', this.descriptor(cmdBytes));
    return schemaFromIpcMessage(res.schema);
  }

  getSchema(command, object = {}) {
    return this.getSchemaRaw(this.proto.pack(command, object));
  }

  // DoGet of one ticket; resolves {table, messages} (the raw FlightData list).
  async doGet(ticketBytes) {
    const messages = await this.serverStream('DoGet', { ticket: Buffer.from(ticketBytes) });
    const withHeader = messages.filter((m) => m.data_header && m.data_header.length > 0);
    if (withHeader.length === 0) throw new Error('DoGet stream carried no IPC messages');
    const first = messageInfo(withHeader[0].data_header).headerType;
    if (first !== MessageHeaderType.Schema) {
      throw new Error(`DoGet stream starts with message type ${first}, not a Schema`);
    }
    return { table: tableFromIPC(ipcStreamFromFlightData(messages)), messages };
  }

  // GetFlightInfo, then DoGet of every endpoint in order, concatenated into one table.
  // Resolves {info, table, schema} (schema: FlightInfo.schema decoded).
  async queryRaw(cmdBytes) {
    const info = await this.getFlightInfoRaw(cmdBytes);
    const schema = schemaFromIpcMessage(info.schema);
    let table = null;
    for (const endpoint of info.endpoint) {
      const { table: part } = await this.doGet(endpoint.ticket.ticket);
      table = table === null ? part : table.concat(part);
    }
    if (table === null) throw new Error('FlightInfo has no endpoints');
    return { info, table, schema };
  }

  query(command, object = {}) {
    return this.queryRaw(this.proto.pack(command, object));
  }

  // DoAction; resolves the Result bodies (Buffers).
  async doAction(type, body = Buffer.alloc(0)) {
    const results = await this.serverStream('DoAction', { type, body: Buffer.from(body) });
    return results.map((r) => r.body);
  }

  async listActions() {
    return this.serverStream('ListActions', {});
  }

  // DoPut with a command descriptor and optionally a table; the first FlightData carries the
  // descriptor and the schema message (an empty schema when `table` is null). Resolves the
  // PutResult app_metadata buffers.
  async doPutRaw(cmdBytes, table = null) {
    return this.doPutMessages(cmdBytes, ipcMessagesOf(table ?? new Table(new Schema([]))));
  }

  // DoPut of IPC messages, the first carrying the descriptor; resolves the app_metadata buffers.
  async doPutMessages(cmdBytes, ipc) {
    const data = ipc.map((m, i) => ({
      flight_descriptor: i === 0 ? this.descriptor(cmdBytes) : null,
      data_header: m.header,
      app_metadata: Buffer.alloc(0),
      data_body: m.body,
    }));
    const { responses } = await this.bidi('DoPut', data);
    return responses.map((r) => r.app_metadata);
  }

  // DoPut as the client libraries send a statement without parameters: 'descriptor' (the
  // descriptor alone), 'schema' (an empty schema, no batch: Arrow C++), 'schema+batch' (an empty
  // schema and a 0-row batch: the Java/JDBC driver). Resolves the PutResult app_metadata buffers.
  async doPutWithoutValues(cmdBytes, shape) {
    if (shape === 'descriptor') {
      return this.doPutMessages(cmdBytes, [{ header: Buffer.alloc(0), body: Buffer.alloc(0) }]);
    }
    if (shape !== 'schema' && shape !== 'schema+batch') throw new Error(`unknown shape ${shape}`);
    const empty = shape === 'schema+batch'
      ? new Table([new RecordBatch(new Schema([]),
        makeData({ type: new Struct([]), length: 0, nullCount: 0, children: [] }))])
      : new Table(new Schema([]));
    return this.doPutMessages(cmdBytes, ipcMessagesOf(empty));
  }

  doPut(command, object, table = null) {
    return this.doPutRaw(this.proto.pack(command, object), table);
  }

  // DoExchange with one descriptor-only message (skade refuses it).
  async doExchange(cmdBytes) {
    return this.bidi('DoExchange', [{ flight_descriptor: this.descriptor(cmdBytes) }]);
  }

  // ---- Flight SQL conveniences ----

  // CommandStatementUpdate → DoPutUpdateResult.record_count (a Number).
  async executeUpdate(sql) {
    const results = await this.doPut('CommandStatementUpdate', { query: sql });
    return this.updateCount(results);
  }

  updateCount(results) {
    if (results.length !== 1) throw new Error(`expected one PutResult, got ${results.length}`);
    return Number(this.proto.decode('DoPutUpdateResult', results[0]).record_count);
  }

  // Runs a Flight SQL action whose request and result are Any-packed messages.
  async sqlAction(type, requestName, request, resultName = null) {
    const bodies = await this.doAction(type, this.proto.pack(requestName, request));
    if (resultName === null) return bodies;
    if (bodies.length !== 1) throw new Error(`${type}: expected one Result, got ${bodies.length}`);
    return this.proto.unpack(resultName, bodies[0]);
  }

  // CreatePreparedStatement → {handle, datasetSchema, parameterSchema, raw}.
  async prepare(sql) {
    const raw = await this.sqlAction(
      'CreatePreparedStatement',
      'ActionCreatePreparedStatementRequest',
      { query: sql },
      'ActionCreatePreparedStatementResult',
    );
    return {
      handle: raw.prepared_statement_handle,
      datasetSchema: schemaFromIpcMessage(raw.dataset_schema),
      parameterSchema: schemaFromIpcMessage(raw.parameter_schema),
      raw,
    };
  }

  // Binds parameters (DoPut with CommandPreparedStatementQuery); returns the handle to use next
  // (the server may send a new one in DoPutPreparedStatementResult).
  async bind(handle, table) {
    const results = await this.doPut(
      'CommandPreparedStatementQuery',
      { prepared_statement_handle: handle },
      table,
    );
    for (const r of results) {
      if (r.length === 0) continue;
      const res = this.proto.decode('DoPutPreparedStatementResult', r);
      if (res.prepared_statement_handle && res.prepared_statement_handle.length > 0) {
        return res.prepared_statement_handle;
      }
    }
    return handle;
  }

  preparedQuery(handle) {
    return this.query('CommandPreparedStatementQuery', { prepared_statement_handle: handle });
  }

  async preparedUpdate(handle, table = null) {
    const results = await this.doPut(
      'CommandPreparedStatementUpdate',
      { prepared_statement_handle: handle },
      table,
    );
    return this.updateCount(results);
  }

  closePrepared(handle) {
    return this.sqlAction('ClosePreparedStatement', 'ActionClosePreparedStatementRequest', {
      prepared_statement_handle: handle,
    });
  }

  // CommandStatementIngest; `options` are the message fields (table, schema, catalog,
  // table_definition_options, …). Resolves the record count.
  async ingest(options, table) {
    const results = await this.doPut('CommandStatementIngest', options, table);
    return this.updateCount(results);
  }

  // Session options: values are {string_value: …} etc. (SessionOptionValue objects).
  async setSessionOptions(options) {
    const body = this.proto.encode(`${FLIGHT_PACKAGE}.SetSessionOptionsRequest`, {
      session_options: options,
    });
    const bodies = await this.doAction('SetSessionOptions', body);
    if (bodies.length !== 1) throw new Error(`SetSessionOptions: ${bodies.length} results`);
    return this.proto.decode(`${FLIGHT_PACKAGE}.SetSessionOptionsResult`, bodies[0]);
  }

  async getSessionOptions() {
    const body = this.proto.encode(`${FLIGHT_PACKAGE}.GetSessionOptionsRequest`, {});
    const bodies = await this.doAction('GetSessionOptions', body);
    if (bodies.length !== 1) throw new Error(`GetSessionOptions: ${bodies.length} results`);
    return this.proto.decode(`${FLIGHT_PACKAGE}.GetSessionOptionsResult`, bodies[0]);
  }

  async closeSession() {
    const body = this.proto.encode(`${FLIGHT_PACKAGE}.CloseSessionRequest`, {});
    const bodies = await this.doAction('CloseSession', body);
    if (bodies.length !== 1) throw new Error(`CloseSession: ${bodies.length} results`);
    return this.proto.decode(`${FLIGHT_PACKAGE}.CloseSessionResult`, bodies[0]);
  }

  // The FlightInfo as bytes (for cancellation requests).
  encodeFlightInfo(info) {
    return this.proto.encode(`${FLIGHT_PACKAGE}.FlightInfo`, info);
  }

  // CancelFlightInfo action → CancelFlightInfoResult.status.
  async cancelFlightInfo(info) {
    const body = this.proto.encode(`${FLIGHT_PACKAGE}.CancelFlightInfoRequest`, { info });
    const bodies = await this.doAction('CancelFlightInfo', body);
    if (bodies.length !== 1) throw new Error(`CancelFlightInfo: ${bodies.length} results`);
    return this.proto.decode(`${FLIGHT_PACKAGE}.CancelFlightInfoResult`, bodies[0]).status;
  }

  // The deprecated Flight SQL CancelQuery action → ActionCancelQueryResult.result.
  async cancelQuery(info) {
    const res = await this.sqlAction(
      'CancelQuery',
      'ActionCancelQueryRequest',
      { info: this.encodeFlightInfo(info) },
      'ActionCancelQueryResult',
    );
    return res.result;
  }
}

// ---- reading results ----

// A plain JS value for an Arrow value: bigints as strings, Dates as epoch ms, binary as hex,
// decimals as their scaled decimal text, nested values as arrays/objects.
export function plainValue(type, v) {
  if (v === null || v === undefined) return null;
  const typeName = String(type);
  if (typeName.startsWith('Decimal')) return decimalText(v, type.scale);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.getTime();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (type.children && type.children.length > 0 && typeof v.toJSON === 'function') {
    if (typeName.startsWith('List') || typeName.startsWith('LargeList')) {
      return Array.from(v, (x) => plainValue(type.children[0].type, x));
    }
    if (typeName.startsWith('Struct')) {
      const out = {};
      for (const f of type.children) out[f.name] = plainValue(f.type, v[f.name]);
      return out;
    }
    if (typeName.startsWith('Map')) {
      const entry = type.children[0].type; // struct<key, value>
      const out = [];
      for (const [k, x] of v) {
        out.push([plainValue(entry.children[0].type, k), plainValue(entry.children[1].type, x)]);
      }
      return out;
    }
  }
  if (ArrayBuffer.isView(v)) return Array.from(v, (x) => (typeof x === 'bigint' ? x.toString() : x));
  return v;
}

// A Decimal128 value (apache-arrow gives its four 32-bit little-endian words) as text.
function decimalText(v, scale) {
  let words = v;
  if (!(words instanceof Uint32Array)) words = new Uint32Array(words.buffer, words.byteOffset, 4);
  let n = 0n;
  for (let i = words.length - 1; i >= 0; i--) n = (n << 32n) | BigInt(words[i]);
  const bits = BigInt(words.length * 32);
  if (n >> (bits - 1n)) n -= 1n << bits;
  const negative = n < 0n;
  let digits = (negative ? -n : n).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return (negative ? '-' : '') + digits;
}

// Rows of a table as objects of plain values (see plainValue).
export function rowsOf(table) {
  const rows = [];
  const fields = table.schema.fields;
  const columns = fields.map((f) => table.getChild(f.name));
  for (let i = 0; i < table.numRows; i++) {
    const row = {};
    fields.forEach((f, c) => (row[f.name] = plainValue(f.type, columns[c].get(i))));
    rows.push(row);
  }
  return rows;
}

// A schema as [{name, type, nullable, metadata}] (type as apache-arrow prints it).
export function describeSchema(schema) {
  if (!schema) return null;
  return schema.fields.map((f) => ({
    name: f.name,
    type: String(f.type),
    nullable: f.nullable,
    metadata: Object.fromEntries(f.metadata ?? new Map()),
  }));
}

// The dense-union cell of a GetSqlInfo row: {typeId, child, value}. apache-arrow's get()
// returns the value; the type id comes from the union's typeIds buffer and names the child.
export function unionCell(table, column, row) {
  let offset = row;
  for (const batch of table.batches) {
    if (offset < batch.numRows) {
      const vector = batch.getChild(column);
      const data = vector.data[0];
      const typeId = data.typeIds[data.offset + offset];
      const type = vector.type;
      const child = type.children[type.typeIdToChildIndex[typeId]];
      return { typeId, child: child ? child.name : null, value: vector.get(offset) };
    }
    offset -= batch.numRows;
  }
  throw new Error(`row ${row} out of range`);
}
