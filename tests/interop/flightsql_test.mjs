// Runs Arrow Flight SQL commands against live `skade serve` processes with the independent
// Node.js client in flightsql_client.mjs and checks the results exactly.
//   node flightsql_test.mjs --skade PATH --proto-dir DIR --warehouse DIR --tmp DIR --group NAME
//        [--mode cookies|cookieless]…
// Every group runs once per mode (both by default): with clients that echo the session cookie
// (the JDBC driver) and with clients that send none (ADBC's default, pyarrow, Arrow C++); case
// names of the cookie-less run start with "cookieless/". Groups about sessions themselves run
// with cookies only.
// The warehouse must hold the lake flightsql_interop_test.cc prepares (see LAKE below). Each group
// starts the servers it needs on 127.0.0.1 port 0, prints one line per case ("ok   group/case"
// or "FAIL group/case: why"), stops its servers with SIGTERM (they must exit 0) and exits 1 if any
// case failed. Groups: metadata queries prepared updates ingest sessions cancel readonly lockdown
// auth tls commits badinput.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  Table,
  Float64,
  Int64,
  Utf8,
  Int32,
  vectorFromArray,
  Type,
  UnionMode,
  Dictionary,
} from 'apache-arrow';
import {
  FlightSqlClient,
  Status,
  describeSchema,
  rowsOf,
  unionCell,
  schemaFromIpcMessage,
} from './flightsql_client.mjs';

// ---- arguments ----

const args = { groups: [], modes: [] };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => process.argv[++i];
  if (a === '--skade') args.skade = next();
  else if (a === '--proto-dir') args.protoDir = next();
  else if (a === '--warehouse') args.warehouse = next();
  else if (a === '--fixtures') args.fixtures = next();
  else if (a === '--tmp') args.tmp = next();
  else if (a === '--group') args.groups.push(next());
  else if (a === '--mode') args.modes.push(next());
  else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}
for (const k of ['skade', 'protoDir', 'warehouse', 'tmp']) {
  if (!args[k]) {
    console.error(`missing --${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`);
    process.exit(2);
  }
}

// ---- the lake flightsql_interop_test.cc prepares (keep both in step) ----

const LAKE = {
  schemas: ['a', 'a.b', 'one', 'x', 'x.y', 'x.y.z'],
  tables: [
    ['a.b', 'empty_t'],
    ['a.b', 'order_lines'],
    ['a.b', 'orders'],
    ['one', 'items'],
    ['x.y.z', 'deep'],
  ],
  orders: [
    { id: '1', name: 'apple', price: '1.50', day: '2024-01-02' },
    { id: '2', name: 'pear', price: '0.75', day: '2024-02-29' },
    { id: '3', name: 'fig', price: null, day: null },
  ],
  items: [
    { id: '1', label: 'alpha' },
    { id: '2', label: 'beta' },
    { id: '3', label: null },
  ],
  orderLines: [
    { order_id: '1', line: 1, qty: 5 },
    { order_id: '1', line: 2, qty: 1 },
    { order_id: '2', line: 1, qty: 3 },
  ],
  deep: [
    { k: 10, v: 'ten' },
    { k: 20, v: 'twenty' },
  ],
};

const ORDERS_SQL =
  'SELECT id, name, CAST(price AS VARCHAR) AS price, CAST(day AS VARCHAR) AS day ' +
  'FROM skade."a.b".orders ORDER BY id';

// ---- output and assertions ----

const CASE_TIMEOUT_MS = 60000;
let currentGroup = '';
let currentMode = 'cookies';
let passed = 0;
let failed = 0;

function out(line) {
  process.stdout.write(line + '\n');
}

function json(v) {
  const s = JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x));
  return s === undefined ? String(v) : s.length > 1500 ? s.slice(0, 1500) + '…' : s;
}

const CODE_NAMES = Object.fromEntries(Object.entries(Status).map(([k, v]) => [v, k]));

// One line per error (server messages may span lines).
function describeError(e) {
  const text =
    e && typeof e.code === 'number' && 'details' in e
      ? `gRPC ${CODE_NAMES[e.code] ?? e.code}: ${e.details}`
      : e && e.message
        ? e.message
        : String(e);
  return text.replace(/\s*\n\s*/g, ' | ');
}

// Runs one named case; a throw or a timeout fails it.
async function run(name, fn) {
  const started = Date.now();
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        const timeout = new Error(`timed out after ${CASE_TIMEOUT_MS} ms`);
        timer = setTimeout(() => reject(timeout), CASE_TIMEOUT_MS);
      }),
    ]);
    passed++;
    out(`ok   ${currentGroup}/${name} (${Date.now() - started} ms)`);
  } catch (e) {
    failed++;
    out(`FAIL ${currentGroup}/${name}: ${describeError(e)}`);
  } finally {
    clearTimeout(timer);
  }
}

function eq(actual, expected, what) {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new Error(`${what}: expected ${json(expected)}, got ${json(actual)}`);
  }
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

// Runs `fn` for every item and fails afterwards with all failures, so one case reports every
// statement that misbehaves instead of the first.
async function forEachItem(items, fn) {
  const failures = [];
  for (const item of items) {
    try {
      await fn(item);
    } catch (e) {
      failures.push(describeError(e));
    }
  }
  if (failures.length > 0) {
    throw new Error(`${failures.length} of ${items.length} failed: ${failures.join(' ;; ')}`);
  }
}

// Awaits `promise`, which must fail with one of `codes` and a non-empty message; returns the error.
async function expectStatus(promise, codes, what) {
  const wanted = [].concat(codes);
  const names = wanted.map((c) => CODE_NAMES[c]).join(' or ');
  try {
    await promise;
  } catch (e) {
    if (typeof e.code !== 'number' || !('details' in e)) {
      throw new Error(`${what}: expected ${names}, got a client-side error: ${describeError(e)}`);
    }
    if (!wanted.includes(e.code)) {
      throw new Error(`${what}: expected ${names}, got ${describeError(e)}`);
    }
    if (!e.details || e.details.trim() === '') {
      throw new Error(`${what}: ${CODE_NAMES[e.code]} without a message`);
    }
    return e;
  }
  throw new Error(`${what}: expected ${names}, but the call succeeded`);
}

// [{name, type, nullable}] of a schema (no metadata).
function fields(schema) {
  check(schema, 'no schema');
  return describeSchema(schema).map(({ name, type, nullable }) => ({ name, type, nullable }));
}

// Compares a schema with [[name, type, nullable], …]; nullable null means "not checked".
function expectFields(schema, expected, what) {
  const got = fields(schema);
  eq(got.map((f) => f.name), expected.map((f) => f[0]), `${what}: field names`);
  eq(got.map((f) => f.type), expected.map((f) => f[1]), `${what}: field types`);
  expected.forEach(([name, , nullable], i) => {
    if (nullable !== null) eq(got[i].nullable, nullable, `${what}: nullability of ${name}`);
  });
}

// ---- processes ----

const servers = new Set();
process.on('exit', () => {
  for (const s of servers) if (s.exitCode === null) s.child.kill('SIGKILL');
});

class Server {
  // Starts `skade --warehouse W serve --flight-port 0 …extra` and waits for its
  // "flight sql listening on 127.0.0.1:PORT" line.
  static start(name, extra = [], warehouse = args.warehouse) {
    const logPath = path.join(args.tmp, `server-${currentGroup.replace("/", "-")}-${name}.log`);
    const logFile = fs.openSync(logPath, 'w');
    const argv = ['--warehouse', warehouse, 'serve', '--flight-port', '0', ...extra];
    const child = spawn(args.skade, argv, { stdio: ['ignore', 'pipe', logFile] });
    const server = new Server(name, child, logPath);
    servers.add(server);
    return new Promise((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${name}: no "flight sql listening" line within 15 s; ${server.logTail()}`));
      }, 15000);
      child.stdout.on('data', (chunk) => {
        buffered += chunk.toString();
        fs.appendFileSync(logPath + '.stdout', chunk);
        const m = /flight sql listening on 127\.0\.0\.1:(\d+)/.exec(buffered);
        if (m && server.port === null) {
          server.port = Number(m[1]);
          clearTimeout(timer);
          resolve(server);
        }
      });
      child.on('exit', (code, signal) => {
        server.exitCode = code;
        server.exitSignal = signal;
        if (server.port === null) {
          clearTimeout(timer);
          const how = `exited (${code ?? signal}) before listening`;
          reject(new Error(`${name}: skade ${argv.join(' ')} ${how}; ${server.logTail()}`));
        }
      });
    });
  }

  constructor(name, child, logPath) {
    this.name = name;
    this.child = child;
    this.logPath = logPath;
    this.port = null;
    this.exitCode = null;
    this.exitSignal = null;
    this.clients = [];
  }

  logTail() {
    try {
      const text = fs.readFileSync(this.logPath, 'utf8');
      return `stderr: ${text.slice(-1500)}`;
    } catch {
      return 'no stderr';
    }
  }

  address(host = '127.0.0.1') {
    return `${host}:${this.port}`;
  }

  // A client in the run's cookie mode unless `options.cookies` says otherwise.
  client(options = {}) {
    const c = FlightSqlClient.connect({
      address: this.address(options.host),
      protoDir: args.protoDir,
      cookies: currentMode === 'cookies',
      ...options,
    });
    this.clients.push(c);
    return c;
  }

  // SIGTERM; resolves {code, signal}; SIGKILL after 10 s.
  stop() {
    for (const c of this.clients) c.close();
    return new Promise((resolve) => {
      const done = () => resolve({ code: this.exitCode, signal: this.exitSignal });
      if (this.exitCode !== null || this.exitSignal !== null) return done();
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
      }, 10000);
      this.child.on('exit', () => {
        clearTimeout(timer);
        done();
      });
      this.child.kill('SIGTERM');
    });
  }
}

// Ends a group: stops the server and checks it exited 0 on SIGTERM.
async function stopServer(server) {
  await run(`${server.name} exits 0 on SIGTERM`, async () => {
    const { code, signal } = await server.stop();
    eq({ code, signal }, { code: 0, signal: null }, `exit of ${server.name}`);
  });
}

// Runs the skade CLI on `warehouse`; throws unless it exits 0. Returns stdout.
function cli(cliArgs, warehouse = args.warehouse) {
  const r = spawnSync(args.skade, ['--warehouse', warehouse, ...cliArgs], {
    encoding: 'utf8',
    timeout: 60000,
  });
  if (r.status !== 0) {
    throw new Error(`skade ${cliArgs.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  }
  return r.stdout;
}

// `skade sql … --format json` rows (another process reading the lake).
function cliRows(sql, warehouse = args.warehouse) {
  return JSON.parse(cli(['sql', sql, '--format', 'json'], warehouse));
}

// ---- small query helpers ----

async function rows(client, sql) {
  const { table } = await client.query('CommandStatementQuery', { query: sql });
  return rowsOf(table);
}

// The server answers a trivial query (used after bad input).
async function expectAlive(client) {
  eq(await rows(client, 'SELECT 42 AS answer'), [{ answer: 42 }], 'SELECT 42 after the error');
}

function arrowTable(columns) {
  const data = {};
  for (const [name, type, values] of columns) data[name] = vectorFromArray(values, type);
  return new Table(data);
}

// ---- expected result schemas (Flight SQL specification, FlightSql.proto comments) ----

const SCHEMA = {
  catalogs: [['catalog_name', 'Utf8', false]],
  dbSchemas: [
    ['catalog_name', 'Utf8', true],
    ['db_schema_name', 'Utf8', false],
  ],
  tables: [
    ['catalog_name', 'Utf8', true],
    ['db_schema_name', 'Utf8', true],
    ['table_name', 'Utf8', false],
    ['table_type', 'Utf8', false],
  ],
  tableTypes: [['table_type', 'Utf8', false]],
  primaryKeys: [
    ['catalog_name', 'Utf8', true],
    ['db_schema_name', 'Utf8', true],
    ['table_name', 'Utf8', false],
    ['column_name', 'Utf8', false],
    ['key_name', 'Utf8', true],
    ['key_sequence', 'Int32', false],
  ],
  keys: [
    ['pk_catalog_name', 'Utf8', true],
    ['pk_db_schema_name', 'Utf8', true],
    ['pk_table_name', 'Utf8', false],
    ['pk_column_name', 'Utf8', false],
    ['fk_catalog_name', 'Utf8', true],
    ['fk_db_schema_name', 'Utf8', true],
    ['fk_table_name', 'Utf8', false],
    ['fk_column_name', 'Utf8', false],
    ['key_sequence', 'Int32', false],
    ['fk_key_name', 'Utf8', true],
    ['pk_key_name', 'Utf8', true],
    ['update_rule', 'Uint8', false],
    ['delete_rule', 'Uint8', false],
  ],
  xdbc: [
    ['type_name', 'Utf8', false],
    ['data_type', 'Int32', false],
    ['column_size', 'Int32', true],
    ['literal_prefix', 'Utf8', true],
    ['literal_suffix', 'Utf8', true],
    ['create_params', 'List<Utf8>', true],
    ['nullable', 'Int32', false],
    ['case_sensitive', 'Bool', false],
    ['searchable', 'Int32', false],
    ['unsigned_attribute', 'Bool', true],
    ['fixed_prec_scale', 'Bool', false],
    ['auto_increment', 'Bool', true],
    ['local_type_name', 'Utf8', true],
    ['minimum_scale', 'Int32', true],
    ['maximum_scale', 'Int32', true],
    ['sql_data_type', 'Int32', false],
    ['datetime_subcode', 'Int32', true],
    ['num_prec_radix', 'Int32', true],
    ['interval_precision', 'Int32', true],
  ],
};

// The union child each standard SqlInfo id uses (FlightSql.proto SqlInfo comments).
const SQL_INFO_KIND = (() => {
  const kinds = {};
  const put = (kind, ids) => ids.forEach((id) => (kinds[id] = kind));
  put('string_value', [0, 1, 2, 6, 7, 504, 513, 514, 529, 530, 531]);
  put('bool_value', [3, 4, 5, 9, 10, 11, 500, 501, 502, 506, 515, 516, 518, 519, 520, 521, 523,
    524, 527, 532, 536, 537, 539, 556, 563, 565, 566, 572, 573, 574, 575, 576]);
  put('bigint_value', [541, 542, 543, 544, 545, 546, 547, 548, 549, 550, 551, 552, 553, 554, 555,
    557, 558, 559, 560, 561]);
  put('int32_bitmask', [8, 100, 101, 503, 505, 507, 522, 525, 526, 528, 533, 534, 535, 538, 540,
    562, 564, 567, 568, 569, 570, 571]);
  put('string_list', [508, 509, 510, 511, 512]);
  put('int32_to_int32_list_map', [517]);
  return kinds;
})();

// GetSqlInfo as a map info_name → {child, value}; checks the result schema on the way.
async function sqlInfo(client, info) {
  const { table, schema } = await client.query('CommandGetSqlInfo', { info });
  for (const s of [schema, table.schema]) {
    eq(s.fields.map((f) => f.name), ['info_name', 'value'], 'GetSqlInfo field names');
    eq(String(s.fields[0].type), 'Uint32', 'info_name type');
    eq(s.fields[0].nullable, false, 'info_name nullability');
    const union = s.fields[1].type;
    eq(union.typeId, Type.Union, 'value is a union');
    eq(union.mode, UnionMode.Dense, 'value is a dense union');
    eq(union.children.map((f) => f.name),
      ['string_value', 'bool_value', 'bigint_value', 'int32_bitmask', 'string_list', 'int32_to_int32_list_map'],
      'union children');
    eq(union.children.map((f) => String(f.type)),
      ['Utf8', 'Bool', 'Int64', 'Int32', 'List<Utf8>', 'Map<{key:Int32, value:List<Int32>}>'],
      'union child types');
    eq(Array.from(union.typeIds), [0, 1, 2, 3, 4, 5], 'union type ids');
  }
  const result = new Map();
  const names = table.getChild('info_name');
  for (let i = 0; i < table.numRows; i++) {
    const id = names.get(i);
    check(!result.has(id), `info ${id} returned twice`);
    result.set(id, unionCell(table, 'value', i));
  }
  for (const [id, cell] of result) {
    if (SQL_INFO_KIND[id]) eq(cell.child, SQL_INFO_KIND[id], `union branch of SqlInfo ${id}`);
  }
  return result;
}

// Rows of a metadata command after checking its FlightInfo and GetSchema schemas.
async function metadataRows(client, command, object, expectedSchema) {
  const { table, schema } = await client.query(command, object);
  expectFields(schema, expectedSchema, `${command} FlightInfo.schema`);
  expectFields(table.schema, expectedSchema, `${command} DoGet schema`);
  expectFields(await client.getSchema(command, object), expectedSchema, `${command} GetSchema`);
  return rowsOf(table);
}

const schemaRow = (name) => ({ catalog_name: 'skade', db_schema_name: name });
const tableRow = ([schema, table]) => ({
  catalog_name: 'skade',
  db_schema_name: schema,
  table_name: table,
  table_type: 'TABLE',
});

// ---- groups ----

const groups = {};
// Groups whose subject is the session cookie itself (they choose each client's mode).
const COOKIE_GROUPS = new Set(['sessions']);

groups.metadata = async () => {
  const server = await Server.start('rw');
  const c = server.client();

  await run('GetSqlInfo: requested ids, dense union, server name, read-write', async () => {
    const ids = [0, 1, 2, 3, 4, 5, 8, 9, 10, 100, 503, 504, 505, 526];
    const info = await sqlInfo(c, ids);
    eq([...info.keys()].sort((a, b) => a - b), ids, 'returned info ids');
    eq(info.get(0).value, 'skade', 'FLIGHT_SQL_SERVER_NAME');
    check(typeof info.get(1).value === 'string' && info.get(1).value.length > 0, 'server version is empty');
    check(typeof info.get(2).value === 'string' && info.get(2).value.length > 0, 'arrow version is empty');
    eq(info.get(3).value, false, 'FLIGHT_SQL_SERVER_READ_ONLY');
    eq(info.get(4).value, true, 'FLIGHT_SQL_SERVER_SQL');
    eq(info.get(5).value, false, 'FLIGHT_SQL_SERVER_SUBSTRAIT');
    eq(info.get(8).value, 0, 'FLIGHT_SQL_SERVER_TRANSACTION (NONE)');
    eq(info.get(9).value, true, 'FLIGHT_SQL_SERVER_CANCEL');
    eq(info.get(10).value, true, 'FLIGHT_SQL_SERVER_BULK_INGESTION');
    eq(info.get(100).value, 60000, 'FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT (no --query-timeout: 60 s)');
    eq(info.get(504).value, '"', 'SQL_IDENTIFIER_QUOTE_CHAR');
    for (const id of [503, 505]) {
      check([0, 1, 2, 3].includes(info.get(id).value), `SqlInfo ${id} is not a case-sensitivity ordinal`);
    }
    const ansi = info.get(526).value;
    check(Number.isInteger(ansi) && ansi >= 0 && ansi <= 7, `ANSI92 level ${ansi} is not a bitmask`);
  });

  await run('GetSqlInfo: all ids when none are requested', async () => {
    const info = await sqlInfo(c, []);
    for (const id of [0, 1, 2, 3, 4, 8, 9, 504, 508]) check(info.has(id), `SqlInfo ${id} missing`);
    eq(info.get(0).value, 'skade', 'FLIGHT_SQL_SERVER_NAME');
    const keywords = Array.from(info.get(508).value ?? []);
    check(keywords.length > 0 && keywords.every((k) => typeof k === 'string'), 'SQL_KEYWORDS is empty');
  });

  await run('GetXdbcTypeInfo: schema, order, BIGINT/VARCHAR, data_type filter', async () => {
    const all = await metadataRows(c, 'CommandGetXdbcTypeInfo', {}, SCHEMA.xdbc);
    check(all.length > 0, 'no types');
    const sorted = [...all].sort((a, b) =>
      a.data_type - b.data_type || (a.type_name < b.type_name ? -1 : a.type_name > b.type_name ? 1 : 0));
    eq(all.map((r) => r.type_name), sorted.map((r) => r.type_name), 'ordered by data_type, type_name');
    const byName = new Map(all.map((r) => [r.type_name, r]));
    eq(byName.get('BIGINT')?.data_type, -5, 'BIGINT data_type (XDBC_BIGINT)');
    eq(byName.get('VARCHAR')?.data_type, 12, 'VARCHAR data_type (XDBC_VARCHAR)');
    eq(byName.get('BIGINT')?.sql_data_type, -5, 'BIGINT sql_data_type');
    eq(byName.get('BIGINT')?.datetime_subcode, null, 'BIGINT datetime_subcode');
    // Date/time types: concise data_type, verbose sql_data_type XDBC_DATETIME and a subcode.
    for (const [name, concise, subcode] of [['DATE', 91, 1], ['TIME', 92, 2], ['TIMESTAMP', 93, 3],
      ['TIMESTAMP WITH TIME ZONE', 93, 5]]) {
      const t = byName.get(name);
      eq([t?.data_type, t?.sql_data_type, t?.datetime_subcode], [concise, 9, subcode], `${name} type codes`);
    }
    const bigints = await metadataRows(c, 'CommandGetXdbcTypeInfo', { data_type: -5 }, SCHEMA.xdbc);
    check(bigints.length > 0 && bigints.every((r) => r.data_type === -5), `data_type filter: ${json(bigints)}`);
    check(bigints.some((r) => r.type_name === 'BIGINT'), 'filter -5 lacks BIGINT');
    eq(await metadataRows(c, 'CommandGetXdbcTypeInfo', { data_type: 31337 }, SCHEMA.xdbc), [],
      'unknown data_type');
  });

  await run('GetCatalogs', async () => {
    eq(await metadataRows(c, 'CommandGetCatalogs', {}, SCHEMA.catalogs), [{ catalog_name: 'skade' }],
      'catalogs');
  });

  await run('GetDbSchemas: every namespace level, LIKE patterns, catalog filter', async () => {
    const get = (o) => metadataRows(c, 'CommandGetDbSchemas', o, SCHEMA.dbSchemas);
    eq(await get({}), LAKE.schemas.map(schemaRow), 'all schemas');
    eq(await get({ catalog: 'skade' }), LAKE.schemas.map(schemaRow), 'catalog skade');
    eq(await get({ catalog: 'other' }), [], 'catalog other');
    eq(await get({ catalog: '' }), [], 'catalog "" (schemas without a catalog)');
    eq(await get({ db_schema_filter_pattern: 'a%' }), ['a', 'a.b'].map(schemaRow), "pattern 'a%'");
    eq(await get({ db_schema_filter_pattern: 'x._' }), ['x.y'].map(schemaRow), "pattern 'x._'");
    eq(await get({ db_schema_filter_pattern: '%.%.%' }), ['x.y.z'].map(schemaRow), "pattern '%.%.%'");
    eq(await get({ db_schema_filter_pattern: '_' }), ['a', 'x'].map(schemaRow), "pattern '_'");
    eq(await get({ db_schema_filter_pattern: 'one' }), ['one'].map(schemaRow), "pattern 'one'");
    eq(await get({ db_schema_filter_pattern: 'nothing%' }), [], "pattern 'nothing%'");
  });

  await run('GetTables: all, LIKE patterns, table types, catalog filter', async () => {
    const get = (o) => metadataRows(c, 'CommandGetTables', o, SCHEMA.tables);
    eq(await get({}), LAKE.tables.map(tableRow), 'all tables');
    eq(await get({ db_schema_filter_pattern: 'a.b', table_name_filter_pattern: 'order%' }),
      [['a.b', 'order_lines'], ['a.b', 'orders']].map(tableRow), "a.b / 'order%'");
    eq(await get({ table_name_filter_pattern: 'order_' }), [['a.b', 'orders']].map(tableRow),
      "table pattern 'order_'");
    eq(await get({ db_schema_filter_pattern: 'x%' }), [['x.y.z', 'deep']].map(tableRow), "schema 'x%'");
    eq(await get({ db_schema_filter_pattern: 'a' }), [], "schema 'a' (no tables of its own)");
    eq(await get({ table_types: ['TABLE'] }), LAKE.tables.map(tableRow), "types ['TABLE']");
    eq(await get({ table_types: ['VIEW', 'TABLE'] }), LAKE.tables.map(tableRow), "types ['VIEW','TABLE']");
    eq(await get({ table_types: ['VIEW'] }), [], "types ['VIEW']");
    eq(await get({ catalog: 'other' }), [], 'catalog other');
  });

  await run('GetTables include_schema: table_schema IPC bytes with ARROW:FLIGHT:SQL metadata', async () => {
    const withSchema = [...SCHEMA.tables, ['table_schema', 'Binary', false]];
    const { table, schema } = await c.query('CommandGetTables', {
      db_schema_filter_pattern: 'a.b',
      table_name_filter_pattern: 'orders',
      include_schema: true,
    });
    expectFields(schema, withSchema, 'FlightInfo.schema');
    expectFields(table.schema, withSchema, 'DoGet schema');
    eq(table.numRows, 1, 'rows');
    const ts = schemaFromIpcMessage(table.getChild('table_schema').get(0));
    const f = describeSchema(ts);
    eq(f.map((x) => x.name), ['id', 'name', 'price', 'day'], 'orders columns');
    eq(f.map((x) => x.type), ['Int64', 'Utf8', 'Decimal[10e+2]', 'Date32<DAY>'], 'orders column types');
    eq(ts.fields[2].type.precision, 10, 'price precision');
    eq(ts.fields[2].type.scale, 2, 'price scale');
    eq(f.map((x) => x.nullable), [false, true, true, true], 'nullability (id is required)');
    const key = (k) => `ARROW:FLIGHT:SQL:${k}`;
    eq(f.map((x) => x.metadata[key('TYPE_NAME')]), ['BIGINT', 'VARCHAR', 'DECIMAL(10,2)', 'DATE'], 'TYPE_NAME');
    for (const x of f) {
      eq(x.metadata[key('CATALOG_NAME')], 'skade', `${x.name} CATALOG_NAME`);
      eq(x.metadata[key('TABLE_NAME')], 'orders', `${x.name} TABLE_NAME`);
      // FlightSql.proto names the key DB_SCHEMA_NAME; Arrow's C++, Java and Go libraries (and so
      // the JDBC/ADBC drivers) use SCHEMA_NAME. One of them must be there, and right.
      const schemaKeys = ['SCHEMA_NAME', 'DB_SCHEMA_NAME'].filter((k) => key(k) in x.metadata);
      check(schemaKeys.length > 0, `${x.name} has no SCHEMA_NAME/DB_SCHEMA_NAME: ${json(x.metadata)}`);
      for (const k of schemaKeys) eq(x.metadata[key(k)], 'a.b', `${x.name} ${k}`);
    }
    eq(f[2].metadata[key('PRECISION')], '10', 'price PRECISION');
    eq(f[2].metadata[key('SCALE')], '2', 'price SCALE');
    eq(f[0].metadata[key('IS_AUTO_INCREMENT')] ?? '0', '0', 'id IS_AUTO_INCREMENT');
  });

  await run('GetTables include_schema: every table, empty table keeps its schema', async () => {
    const { table } = await c.query('CommandGetTables', { include_schema: true });
    const got = {};
    for (let i = 0; i < table.numRows; i++) {
      const name = `${table.getChild('db_schema_name').get(i)}.${table.getChild('table_name').get(i)}`;
      got[name] = fields(schemaFromIpcMessage(table.getChild('table_schema').get(i))).map(
        (x) => `${x.name}:${x.type}`);
    }
    eq(got, {
      'a.b.empty_t': ['id:Int64', 'note:Utf8'],
      'a.b.order_lines': ['order_id:Int64', 'line:Int32', 'qty:Int32'],
      'a.b.orders': ['id:Int64', 'name:Utf8', 'price:Decimal[10e+2]', 'day:Date32<DAY>'],
      'one.items': ['id:Int64', 'label:Utf8'],
      'x.y.z.deep': ['k:Int32', 'v:Utf8'],
    }, 'table schemas');
  });

  await run('GetTableTypes', async () => {
    const result = await metadataRows(c, 'CommandGetTableTypes', {}, SCHEMA.tableTypes);
    const types = result.map((r) => r.table_type);
    check(types.includes('TABLE'), `no TABLE in ${json(types)}`);
    eq(types, [...new Set(types)].sort(), 'sorted and distinct');
  });

  await run('GetPrimaryKeys from identifier fields', async () => {
    const get = (o) => metadataRows(c, 'CommandGetPrimaryKeys', o, SCHEMA.primaryKeys);
    const strip = (rs) => rs.map(({ key_name, ...r }) => r);
    const orders = await get({ catalog: 'skade', db_schema: 'a.b', table: 'orders' });
    eq(strip(orders), [{ catalog_name: 'skade', db_schema_name: 'a.b', table_name: 'orders',
      column_name: 'id', key_sequence: 1 }], 'orders key');
    eq(strip(await get({ table: 'orders' })), strip(orders), 'orders key without catalog/schema');
    const lines = await get({ db_schema: 'a.b', table: 'order_lines' });
    const line = { catalog_name: 'skade', db_schema_name: 'a.b', table_name: 'order_lines' };
    eq(strip(lines), [
      { ...line, column_name: 'order_id', key_sequence: 1 },
      { ...line, column_name: 'line', key_sequence: 2 },
    ], 'order_lines composite key');
    eq(new Set(lines.map((r) => r.key_name)).size, 1, 'one key_name for the composite key');
    eq(await get({ db_schema: 'one', table: 'items' }), [], 'items has no identifier fields');
    eq(await get({ db_schema: 'a.b', table: 'no_such_table' }), [], 'unknown table');
  });

  await run('GetExportedKeys / GetImportedKeys / GetCrossReference: empty, well-formed', async () => {
    const keys = (command, o) => metadataRows(c, command, o, SCHEMA.keys);
    eq(await keys('CommandGetExportedKeys', { db_schema: 'a.b', table: 'orders' }), [], 'exported keys');
    eq(await keys('CommandGetImportedKeys', { db_schema: 'a.b', table: 'order_lines' }), [],
      'imported keys');
    eq(await metadataRows(c, 'CommandGetCrossReference', { pk_db_schema: 'a.b', pk_table: 'orders',
      fk_db_schema: 'a.b', fk_table: 'order_lines' }, SCHEMA.keys), [], 'cross reference');
  });

  await run('ListActions names the Flight SQL and session actions', async () => {
    const types = (await c.listActions()).map((a) => a.type);
    for (const t of ['CreatePreparedStatement', 'ClosePreparedStatement', 'CancelFlightInfo', 'CancelQuery',
      'SetSessionOptions', 'GetSessionOptions', 'CloseSession']) {
      check(types.includes(t), `ListActions lacks ${t}: ${json(types)}`);
    }
  });

  await stopServer(server);
};

groups.queries = async () => {
  const server = await Server.start('rw');
  const c = server.client();

  await run('StatementQuery on a 2-level namespace: exact rows', async () => {
    eq(await rows(c, ORDERS_SQL), LAKE.orders, 'orders');
  });

  await run('DuckDB result types decode: dictionary, union, decimal, nested, interval, zoned timestamp', async () => {
    const { table } = await c.query('CommandStatementQuery', {
      query: "SELECT 'b'::ENUM('a', 'b') AS e, 12.34::DECIMAL(10,2) AS d, [1, 2] AS l, {'x': 1} AS s, " +
        "MAP {'k': 2} AS m, INTERVAL 3 DAY AS i, 7::UNION(n INT, t VARCHAR) AS u, " +
        "TIMESTAMPTZ '2024-01-02 03:04:05+00' AS ts",
    });
    const types = Object.fromEntries(table.schema.fields.map((f) => [f.name, String(f.type)]));
    check(types.e.startsWith('Dictionary<'), `ENUM arrives as ${types.e}, not as a dictionary`);
    check(types.u.startsWith('Union<'), `UNION arrives as ${types.u}`);
    check(types.ts.includes('UTC'), `TIMESTAMPTZ arrives as ${types.ts}`);
    eq(String(table.getChild('e').get(0)), 'b', 'ENUM value');
    eq(String(table.getChild('d').get(0)), '1234', 'DECIMAL(10,2) unscaled value');
    eq([...table.getChild('l').get(0)], [1, 2], 'list');
    eq(table.getChild('s').get(0).x, 1, 'struct field');
    eq(table.getChild('u').get(0), 7, 'union value');
    eq(table.numRows, 1, 'rows');
    const meta = table.schema.fields.find((f) => f.name === 'd').metadata;
    eq(meta.get('ARROW:FLIGHT:SQL:TYPE_NAME'), 'DECIMAL(10,2)', 'TYPE_NAME of d');
    eq(meta.get('ARROW:FLIGHT:SQL:SCALE'), '2', 'SCALE of d');
  });

  await run('TYPE_NAME is the SQL type of every DuckDB result column', async () => {
    const { table, schema } = await c.query('CommandStatementQuery', {
      query: "SELECT 'b'::ENUM('a', 'b') AS e, 12.34::DECIMAL(10,2) AS d, [1, 2] AS l, [1, 2]::INTEGER[2] AS a, " +
        "{'x': 1} AS s, MAP {'k': 2} AS m, INTERVAL 3 DAY AS i, 7::UNION(n INT, t VARCHAR) AS u, " +
        "TIMESTAMPTZ '2024-01-02 03:04:05+00' AS ts, TIMESTAMP '2024-01-02 03:04:05' AS t, " +
        "'00000000-0000-0000-0000-000000000001'::UUID AS id, 5::UHUGEINT AS uh, 5::HUGEINT AS h, " +
        "TIME '01:02:03' AS tm, 'x'::BLOB AS b, true AS bo",
    });
    const expected = {
      e: "ENUM('a', 'b')", d: 'DECIMAL(10,2)', l: 'INTEGER[]', a: 'INTEGER[2]', s: 'STRUCT', m: 'MAP', i: 'INTERVAL',
      // UUID leaves as text and HUGEINT as DECIMAL(38,0) (DuckDB's Arrow export): the name
      // describes the values the client gets.
      u: 'UNION(n INTEGER, t VARCHAR)', ts: 'TIMESTAMP WITH TIME ZONE', t: 'TIMESTAMP', id: 'VARCHAR', uh: 'UHUGEINT', h: 'DECIMAL(38,0)',
      tm: 'TIME', b: 'BLOB', bo: 'BOOLEAN',
    };
    for (const [where, sch] of [['FlightInfo', schema], ['stream', table.schema]]) {
      const got = Object.fromEntries(sch.fields.map((f) => [f.name, f.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME')]));
      eq(got, expected, `TYPE_NAME in the ${where} schema`);
    }
  });

  await run('a table Spark wrote (fixture partition_bucket_test), registered and served, gives its documented rows', async () => {
    const wh = path.join(args.tmp, `fixture-lake-${currentMode}`);
    const table = path.join(args.fixtures, 'iceberg', 'partition_bucket_test');
    cli(['ns', 'create', 'fx'], wh);
    cli(['register', 'fx.bucket', table], wh);
    const fx = await Server.start('fixtures', ['--allow-dir', table], wh);
    try {
      const f = fx.client();
      eq(await rows(f, 'SELECT count(*) AS n FROM skade.fx.bucket'), [{ n: '100' }], 'count(*)');
      eq(await rows(f, "SELECT count(*) AS n FROM skade.fx.bucket WHERE partition_col IN ('partition_0','partition_1','partition_2')"),
        [{ n: '30' }], 'IN (…)');
      eq(await rows(f, "SELECT count(*) AS n FROM skade.fx.bucket WHERE partition_col >= 'partition_3' AND partition_col <= 'partition_7'"),
        [{ n: '50' }], 'range');
      const five = [];
      for (let i = 5; i < 100; i += 10) five.push({ id: String(i), name: `user_${i}` });
      eq(await rows(f, "SELECT id, name FROM skade.fx.bucket WHERE partition_col = 'partition_5' ORDER BY id"), five,
        "partition_col = 'partition_5'");
      const groups = [];
      for (let i = 0; i < 10; i++) groups.push({ partition_col: `partition_${i}`, n: '10' });
      eq(await rows(f, 'SELECT partition_col, count(*) AS n FROM skade.fx.bucket GROUP BY 1 ORDER BY 1'), groups, 'GROUP BY');
    } finally {
      await stopServer(fx);
    }
  });

  await run('a 20M-row SELECT streams: the server never holds the result (peak RSS well below its size)', async () => {
    // 20M rows x 2 BIGINT = 320 MB of Arrow bodies; a server that materialised them would grow
    // by more than that. Measured as the peak's growth over the RSS before the query, so a sanitizer's
    // fixed overhead (shadow memory, quarantine) does not count as holding the result.
    const rssKb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`)
      .exec(fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))[1]);
    // Writing 5 to clear_refs resets the peak (VmHWM) to the present RSS: earlier tests' peaks
    // do not count.
    fs.writeFileSync(`/proc/${server.child.pid}/clear_refs`, '5');
    const beforeKb = rssKb('VmRSS');
    const info = await c.getFlightInfo('CommandStatementQuery',
      { query: 'SELECT range AS a, range * 2 AS b FROM range(20000000)' });
    const call = c.stub.DoGet({ ticket: info.endpoint[0].ticket.ticket }, c.metadata());
    let bytes = 0;
    for await (const m of call) bytes += m.data_body.length;
    check(bytes >= 320e6, `received ${bytes} body bytes`);
    const peakKb = rssKb('VmHWM');
    check(peakKb - beforeKb < 160 * 1024,
      `server peak RSS ${Math.round(peakKb / 1024)} MB, ${Math.round(beforeKb / 1024)} MB before the query`);
  });

  await run('StatementQuery on 1- and 3-level namespaces', async () => {
    eq(await rows(c, 'SELECT * FROM skade.one.items ORDER BY id'), LAKE.items, 'one.items');
    eq(await rows(c, 'SELECT k, v FROM skade."x.y.z".deep ORDER BY k'), LAKE.deep, 'x.y.z.deep');
  });

  await run('StatementQuery join across namespaces', async () => {
    eq(await rows(c,
      'SELECT o.name, l.line, l.qty, d.v FROM skade."a.b".orders o ' +
      'JOIN skade."a.b".order_lines l ON o.id = l.order_id ' +
      'JOIN skade."x.y.z".deep d ON d.k = 10 * CAST(l.order_id AS INTEGER) ORDER BY o.id, l.line'),
    [
      { name: 'apple', line: 1, qty: 5, v: 'ten' },
      { name: 'apple', line: 2, qty: 1, v: 'ten' },
      { name: 'pear', line: 1, qty: 3, v: 'twenty' },
    ], 'join');
  });

  await run('FlightInfo: schema matches the data, one endpoint per ticket is redeemable', async () => {
    const { info, table, schema } = await c.query('CommandStatementQuery', { query: ORDERS_SQL });
    eq(fields(schema), fields(table.schema), 'FlightInfo.schema vs DoGet schema');
    eq(fields(table.schema).map((f) => `${f.name}:${f.type}`),
      ['id:Int64', 'name:Utf8', 'price:Utf8', 'day:Utf8'], 'result types');
    check(info.endpoint.length >= 1, 'no endpoints');
    const gs = await c.getSchema('CommandStatementQuery', { query: ORDERS_SQL });
    eq(fields(gs), fields(table.schema), 'GetSchema vs DoGet schema');
  });

  await run('StatementQuery on an empty table: no rows, its schema', async () => {
    const { table } = await c.query('CommandStatementQuery', { query: 'SELECT * FROM skade."a.b".empty_t' });
    eq(table.numRows, 0, 'rows');
    eq(fields(table.schema).map((f) => `${f.name}:${f.type}`), ['id:Int64', 'note:Utf8'], 'schema');
  });

  await run('StatementQuery types: numbers, bool, text, dates, timestamps, decimal, nested, blob', async () => {
    const { table } = await c.query('CommandStatementQuery', {
      query:
        "SELECT 1::TINYINT AS i8, 2::SMALLINT AS i16, 3::INTEGER AS i32, 4::BIGINT AS i64, " +
        "1.5::DOUBLE AS f64, 2.5::REAL AS f32, true AS b, 'héllo' AS s, DATE '2024-02-29' AS d, " +
        "TIMESTAMP '2024-01-02 03:04:05.678' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05+00' AS tstz, " +
        "-12.34::DECIMAL(10,2) AS dec, [1, 2, NULL]::INTEGER[] AS l, {'a': 1, 'b': 'x'} AS st, " +
        "'\\xAA\\xBB'::BLOB AS bl, NULL::INTEGER AS n",
    });
    const types = Object.fromEntries(fields(table.schema).map((f) => [f.name, f.type]));
    eq(types, {
      i8: 'Int8', i16: 'Int16', i32: 'Int32', i64: 'Int64', f64: 'Float64', f32: 'Float32', b: 'Bool',
      s: 'Utf8', d: 'Date32<DAY>', ts: 'Timestamp<MICROSECOND>', tstz: types.tstz, dec: 'Decimal[10e+2]',
      l: 'List<Int32>', st: 'Struct<{a:Int32, b:Utf8}>', bl: 'Binary', n: 'Int32',
    }, 'types');
    check(/^Timestamp<MICROSECOND, .+>$/.test(types.tstz), `TIMESTAMPTZ type ${types.tstz} has no zone`);
    eq(rowsOf(table), [{
      i8: 1, i16: 2, i32: 3, i64: '4', f64: 1.5, f32: 2.5, b: true, s: 'héllo',
      d: Date.UTC(2024, 1, 29), ts: Date.UTC(2024, 0, 2, 3, 4, 5, 678), tstz: Date.UTC(2024, 0, 2, 3, 4, 5),
      dec: '-12.34', l: [1, 2, null], st: { a: 1, b: 'x' }, bl: 'aabb', n: null,
    }], 'values');
  });

  await run('StatementQuery streams a 300000-row result in several batches', async () => {
    const { table } = await c.query('CommandStatementQuery', {
      query: 'SELECT range AS n, range % 7 AS m FROM range(300000) ORDER BY n',
    });
    eq(table.numRows, 300000, 'rows');
    check(table.batches.length > 1, `one batch of ${table.numRows} rows`);
    const n = table.getChild('n');
    let ok = true;
    let sum = 0n;
    for (let i = 0; i < table.numRows; i++) {
      const v = n.get(i);
      if (v !== BigInt(i)) ok = false;
      sum += table.getChild('m').get(i);
    }
    check(ok, 'n is not 0..299999 in order');
    let expected = 0n;
    for (let i = 0; i < 300000; i++) expected += BigInt(i % 7);
    eq(sum, expected, 'sum of m');
  });

  await run('SQL error: unknown table and unqualified name in a fresh session', async () => {
    await expectStatus(c.query('CommandStatementQuery', { query: 'SELECT * FROM skade."a.b".nope' }),
      Status.INVALID_ARGUMENT, 'unknown table');
    await expectStatus(c.query('CommandStatementQuery', { query: 'SELECT * FROM orders' }),
      Status.INVALID_ARGUMENT, 'orders without schema');
    await expectAlive(c);
  });

  await stopServer(server);
};

groups.prepared = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const sql = 'SELECT id, name FROM skade."a.b".orders WHERE id >= ? ORDER BY id';
  const names = (n) => LAKE.orders.filter((r) => Number(r.id) >= n).map(({ id, name }) => ({ id, name }));

  await run('prepare, parameter schema, bind via DoPut, query, rebind, close', async () => {
    const p = await c.prepare(sql);
    check(p.handle && p.handle.length > 0, 'empty handle');
    eq(fields(p.datasetSchema).map((f) => `${f.name}:${f.type}`), ['id:Int64', 'name:Utf8'], 'dataset schema');
    eq(fields(p.parameterSchema).map((f) => f.type), ['Int64'], 'parameter schema');
    const param = p.parameterSchema.fields[0].name;
    let handle = await c.bind(p.handle, arrowTable([[param, new Int64(), [2n]]]));
    eq(rowsOf((await c.preparedQuery(handle)).table), names(2), 'rows for id >= 2');
    eq(rowsOf((await c.preparedQuery(handle)).table), names(2), 'same binding again');
    handle = await c.bind(handle, arrowTable([[param, new Int64(), [3n]]]));
    const { table, schema } = await c.preparedQuery(handle);
    eq(rowsOf(table), names(3), 'rows for id >= 3');
    eq(fields(schema), fields(p.datasetSchema), 'FlightInfo.schema vs dataset schema');
    const gs = await c.getSchema('CommandPreparedStatementQuery', { prepared_statement_handle: handle });
    eq(fields(gs), fields(p.datasetSchema), 'GetSchema vs dataset schema');
    await c.closePrepared(handle);
    await expectStatus(c.preparedQuery(handle), Status.NOT_FOUND, 'query after close');
    await expectStatus(c.closePrepared(handle), Status.NOT_FOUND, 'close twice');
  });

  await run('prepared statement without parameters', async () => {
    const p = await c.prepare('SELECT count(*) AS n FROM skade.one.items');
    check(p.parameterSchema === null || p.parameterSchema.fields.length === 0,
      `parameter schema ${json(describeSchema(p.parameterSchema))}`);
    eq(rowsOf((await c.preparedQuery(p.handle)).table), [{ n: '3' }], 'count');
    await c.closePrepared(p.handle);
  });

  await run('two parameters of different types', async () => {
    const p = await c.prepare(
      'SELECT order_id, line FROM skade."a.b".order_lines WHERE order_id = ? AND qty >= ? ORDER BY line');
    eq(fields(p.parameterSchema).map((f) => f.type), ['Int64', 'Int32'], 'parameter types');
    const [a, b] = p.parameterSchema.fields.map((f) => f.name);
    const handle = await c.bind(p.handle, arrowTable([[a, new Int64(), [1n]], [b, new Int32(), [2]]]));
    eq(rowsOf((await c.preparedQuery(handle)).table), [{ order_id: '1', line: 1 }], 'rows');
    await c.closePrepared(handle);
  });

  await run('unknown handle', async () => {
    await expectStatus(c.preparedQuery(Buffer.from('no such handle')), Status.NOT_FOUND, 'query');
    await expectStatus(c.closePrepared(Buffer.from('no such handle')), Status.NOT_FOUND, 'close');
  });

  await stopServer(server);
};

groups.updates = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const schemas = async () =>
    rowsOf((await c.query('CommandGetDbSchemas', {})).table).map((r) => r.db_schema_name);

  await run('CREATE SCHEMA (1 and 2 levels) and CREATE TABLE appear in the catalog', async () => {
    await c.executeUpdate('CREATE SCHEMA skade.w');
    await c.executeUpdate('CREATE SCHEMA skade."w.v"');
    eq(await schemas(), [...LAKE.schemas, 'w', 'w.v'].sort(), 'schemas');
    await c.executeUpdate('CREATE TABLE skade.w.t (id BIGINT, s VARCHAR)');
    await c.executeUpdate('CREATE TABLE skade.w.p (id BIGINT, s VARCHAR)');
    const t = rowsOf((await c.query('CommandGetTables', { db_schema_filter_pattern: 'w' })).table);
    eq(t, [tableRow(['w', 'p']), tableRow(['w', 't'])], 'tables of w');
    eq(cli(['tables']).split('\n').filter((l) => l.startsWith('w.')), ['w.p', 'w.t'],
      'skade tables (another process)');
  });

  await run('INSERT VALUES / INSERT SELECT / DELETE WHERE / DELETE return record counts', async () => {
    eq(await c.executeUpdate("INSERT INTO skade.w.t VALUES (1, 'a'), (2, 'b')"), 2, 'INSERT VALUES');
    eq(await c.executeUpdate("INSERT INTO skade.w.t SELECT range + 10, 'r' || range FROM range(3)"), 3,
      'INSERT SELECT');
    eq(await rows(c, 'SELECT id, s FROM skade.w.t ORDER BY id'), [
      { id: '1', s: 'a' }, { id: '2', s: 'b' }, { id: '10', s: 'r0' }, { id: '11', s: 'r1' }, { id: '12', s: 'r2' },
    ], 'rows after inserts');
    eq(await c.executeUpdate('DELETE FROM skade.w.t WHERE id >= 11'), 2, 'DELETE WHERE');
    eq(cliRows('SELECT id, s FROM w.t ORDER BY id'), [
      { id: 1, s: 'a' }, { id: 2, s: 'b' }, { id: 10, s: 'r0' },
    ], 'rows read by skade sql (another process)');
    eq(await c.executeUpdate('DELETE FROM skade.w.t'), 3, 'DELETE all');
    eq(await rows(c, 'SELECT count(*) AS n FROM skade.w.t'), [{ n: '0' }], 'empty after DELETE');
  });

  await run('CREATE TABLE AS SELECT into a nested schema', async () => {
    await c.executeUpdate('CREATE TABLE skade."w.v".c AS SELECT id, name FROM skade."a.b".orders');
    const expected = LAKE.orders.map(({ id, name }) => ({ id, name }));
    eq(await rows(c, 'SELECT id, name FROM skade."w.v".c ORDER BY id'), expected, 'CTAS rows');
    eq(cliRows('SELECT id, name FROM "w.v".c ORDER BY id'),
      expected.map((r) => ({ id: Number(r.id), name: r.name })), 'CTAS rows via skade sql');
  });

  await run('PreparedStatementUpdate: INSERT and DELETE with parameters', async () => {
    const ins = await c.prepare('INSERT INTO skade.w.p VALUES (?, ?)');
    // No result set: clients (the Flight SQL JDBC driver) pick update vs. query by this.
    check(ins.datasetSchema === null || ins.datasetSchema.fields.length === 0,
      `INSERT has a dataset schema ${json(describeSchema(ins.datasetSchema))}`);
    // DuckDB doesn't infer INSERT … VALUES parameter types; the spec has no rule for a parameter
    // of unknown type, and Arrow's Null type is how implementations report one.
    const types = fields(ins.parameterSchema).map((f) => f.type);
    check(types.length === 2 && types.every((t, i) => t === ['Int64', 'Utf8'][i] || t === 'Null'),
      `INSERT parameter types ${json(types)}`);
    const [a, b] = ins.parameterSchema.fields.map((f) => f.name);
    eq(await c.preparedUpdate(ins.handle, arrowTable([[a, new Int64(), [7n]], [b, new Utf8(), ['seven']]])), 1,
      'one parameter row');
    eq(await c.preparedUpdate(ins.handle,
      arrowTable([[a, new Int64(), [8n, 9n]], [b, new Utf8(), ['eight', null]]])), 2, 'two parameter rows');
    await c.closePrepared(ins.handle);
    const del = await c.prepare('DELETE FROM skade.w.p WHERE id = ?');
    const [k] = del.parameterSchema.fields.map((f) => f.name);
    eq(await c.preparedUpdate(del.handle, arrowTable([[k, new Int64(), [8n]]])), 1, 'DELETE id = 8');
    await c.closePrepared(del.handle);
    eq(await rows(c, 'SELECT id, s FROM skade.w.p ORDER BY id'),
      [{ id: '7', s: 'seven' }, { id: '9', s: null }], 'rows');
  });

  await run('CREATE TABLE AS whose query fails registers nothing and replaces nothing', async () => {
    const failing = "SELECT range AS id, CASE WHEN range = 5 THEN error('boom') END AS x FROM range(10)";
    await expectStatus(c.executeUpdate(`CREATE TABLE skade.w.ctas_fail AS ${failing}`), Status.INVALID_ARGUMENT,
      'CTAS with a failing query');
    const t = rowsOf((await c.query('CommandGetTables', { db_schema_filter_pattern: 'w' })).table);
    check(!t.some((r) => r.table_name === 'ctas_fail'), `the failed CTAS registered a table: ${json(t)}`);
    await c.executeUpdate("CREATE TABLE skade.w.keep AS SELECT 1 AS id, 'kept' AS s");
    await expectStatus(c.executeUpdate(`CREATE OR REPLACE TABLE skade.w.keep AS ${failing}`), Status.INVALID_ARGUMENT,
      'CREATE OR REPLACE with a failing query');
    eq(await rows(c, 'SELECT id, s FROM skade.w.keep'), [{ id: 1, s: 'kept' }], 'the replaced table is as it was');
    eq(cliRows('SELECT id, s FROM w.keep'), [{ id: 1, s: 'kept' }], 'as another process sees it');
    await c.executeUpdate('DROP TABLE skade.w.keep');
  });

  await run('prepared updates without parameters run exactly once, whatever empty stream the client sends',
    async () => {
      const shapes = ['descriptor', 'schema', 'schema+batch'];
      for (const [i, shape] of shapes.entries()) {
        const p = await c.prepare(`INSERT INTO skade.w.p VALUES (${100 + i}, '${shape}')`);
        const cmd = c.proto.pack('CommandPreparedStatementUpdate', { prepared_statement_handle: p.handle });
        eq(c.updateCount(await c.doPutWithoutValues(cmd, shape)), 1, `record count (${shape})`);
        await c.closePrepared(p.handle);
      }
      eq(await rows(c, 'SELECT id, s FROM skade.w.p WHERE id >= 100 ORDER BY id'),
        shapes.map((shape, i) => ({ id: String(100 + i), s: shape })), 'one row per execution');
      const ddl = await c.prepare('CREATE TABLE skade.w.made_by_prepare (id BIGINT)');
      const cmd = c.proto.pack('CommandPreparedStatementUpdate', { prepared_statement_handle: ddl.handle });
      await c.doPutWithoutValues(cmd, 'schema+batch');
      eq(await rows(c, 'SELECT count(*) AS n FROM skade.w.made_by_prepare'), [{ n: '0' }], 'prepared CREATE ran');
      await c.executeUpdate('DROP TABLE skade.w.made_by_prepare');
      eq(await c.executeUpdate('DELETE FROM skade.w.p WHERE id >= 100'), 3, 'cleanup');
    });

  await run('dictionary-encoded parameters bind their values, not their indices', async () => {
    const ins = await c.prepare('INSERT INTO skade.w.p VALUES (?, ?)');
    const [a, b] = ins.parameterSchema.fields.map((f) => f.name);
    eq(await c.preparedUpdate(ins.handle, arrowTable([[a, new Int64(), [200n, 201n, 202n]],
      [b, new Dictionary(new Utf8(), new Int32()), ['x', 'y', 'x']]])), 3, 'three rows');
    await c.closePrepared(ins.handle);
    eq(await rows(c, 'SELECT id, s FROM skade.w.p WHERE id >= 200 ORDER BY id'),
      [{ id: '200', s: 'x' }, { id: '201', s: 'y' }, { id: '202', s: 'x' }], 'values');
    const q = await c.prepare('SELECT count(*) AS n FROM skade.w.p WHERE s = ?');
    const [k] = q.parameterSchema.fields.map((f) => f.name);
    const handle = await c.bind(q.handle, arrowTable([[k, new Dictionary(new Utf8(), new Int32()), ['y']]]));
    eq(rowsOf((await c.preparedQuery(handle)).table), [{ n: '1' }], 'query bound to a dictionary value');
    await c.closePrepared(handle);
    eq(await c.executeUpdate('DELETE FROM skade.w.p WHERE id >= 200'), 3, 'cleanup');
  });

  await run('DROP TABLE and DROP SCHEMA', async () => {
    await c.executeUpdate('DROP TABLE skade.w.t');
    await c.executeUpdate('DROP TABLE skade.w.p');
    await c.executeUpdate('DROP TABLE skade."w.v".c');
    eq(rowsOf((await c.query('CommandGetTables', { db_schema_filter_pattern: 'w%' })).table), [],
      'no tables in w, w.v');
    await expectStatus(c.query('CommandStatementQuery', { query: 'SELECT * FROM skade.w.t' }),
      Status.INVALID_ARGUMENT, 'dropped table');
    await c.executeUpdate('DROP SCHEMA skade."w.v"');
    await c.executeUpdate('DROP SCHEMA skade.w');
    eq(await schemas(), LAKE.schemas, 'schemas');
    eq(cli(['tables']).split('\n').filter((l) => l.startsWith('w.')), [], 'skade tables (another process)');
  });

  await stopServer(server);
};

groups.ingest = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const opts = (table, schema, ifNotExist, ifExists) => ({
    table,
    schema,
    catalog: 'skade',
    table_definition_options: { if_not_exist: ifNotExist, if_exists: ifExists },
  });
  const CREATE = 1;
  const FAIL_NOT_EXIST = 2;
  const FAIL = 1;
  const APPEND = 2;
  const REPLACE = 3;
  const batch = (ids, names, scores) =>
    arrowTable([['id', new Int64(), ids], ['s', new Utf8(), names], ['f', new Float64(), scores]]);
  const ingRows = () => rows(c, 'SELECT id, s, f FROM skade.one.ing ORDER BY id');

  await run('ingest creates a table (TABLE_NOT_EXIST_OPTION_CREATE)', async () => {
    eq(await c.ingest(opts('ing', 'one', CREATE, FAIL), batch([1n, 2n, 3n], ['a', 'b', null], [0.5, 1.5, 2.5])), 3,
      'record count');
    eq(await ingRows(), [
      { id: '1', s: 'a', f: 0.5 }, { id: '2', s: 'b', f: 1.5 }, { id: '3', s: null, f: 2.5 },
    ], 'rows');
    eq(rowsOf((await c.query('CommandGetTables', { db_schema_filter_pattern: 'one' })).table),
      [['one', 'ing'], ['one', 'items']].map(tableRow), 'tables of one');
    eq(cliRows('SELECT count(*) AS n FROM one.ing'), [{ n: 3 }], 'skade sql sees the Iceberg table');
  });

  await run('ingest appends (TABLE_EXISTS_OPTION_APPEND), two batches in one DoPut', async () => {
    const two = batch([4n], ['d'], [4.5]).concat(batch([5n], ['e'], [5.5]));
    check(two.batches.length === 2, 'test table is not two batches');
    eq(await c.ingest(opts('ing', 'one', FAIL_NOT_EXIST, APPEND), two), 2, 'record count');
    eq((await ingRows()).map((r) => r.id), ['1', '2', '3', '4', '5'], 'ids');
  });

  await run('ingest replaces (TABLE_EXISTS_OPTION_REPLACE)', async () => {
    eq(await c.ingest(opts('ing', 'one', FAIL_NOT_EXIST, REPLACE), batch([9n], ['z'], [9.5])), 1, 'record count');
    eq(await ingRows(), [{ id: '9', s: 'z', f: 9.5 }], 'rows');
    eq(cliRows('SELECT id FROM one.ing'), [{ id: 9 }], 'skade sql');
  });

  await run('ingest refuses: table exists with FAIL, table missing with FAIL', async () => {
    await expectStatus(c.ingest(opts('ing', 'one', CREATE, FAIL), batch([1n], ['a'], [1])),
      [Status.ALREADY_EXISTS, Status.INVALID_ARGUMENT], 'exists + FAIL');
    await expectStatus(c.ingest(opts('missing', 'one', FAIL_NOT_EXIST, APPEND), batch([1n], ['a'], [1])),
      [Status.NOT_FOUND, Status.INVALID_ARGUMENT], 'missing + FAIL');
    eq(await ingRows(), [{ id: '9', s: 'z', f: 9.5 }], 'rows unchanged');
    eq(rowsOf((await c.query('CommandGetTables', { table_name_filter_pattern: 'missing' })).table), [],
      'missing table not created');
  });

  await run('ingest into a 2-level namespace', async () => {
    eq(await c.ingest(opts('ing2', 'a.b', CREATE, FAIL), batch([1n, 2n], ['p', 'q'], [1, 2])), 2, 'record count');
    eq(await rows(c, 'SELECT id, s FROM skade."a.b".ing2 ORDER BY id'), [{ id: '1', s: 'p' }, { id: '2', s: 'q' }],
      'rows');
  });

  await run('names that are not one path component are refused (ingest and CREATE TABLE)', async () => {
    for (const bad of ['../x', 'a/b', 'a\\b', 'tab\there', 'new\nline', 'dot.ted', '']) {
      await expectStatus(c.ingest(opts(bad, 'one', CREATE, FAIL), batch([1n], ['a'], [1])), Status.INVALID_ARGUMENT,
        `ingest ${json(bad)}`);
      if (bad !== '') {
        await expectStatus(c.executeUpdate(`CREATE TABLE skade.one."${bad.replace(/"/g, '""')}" (id BIGINT)`),
          Status.INVALID_ARGUMENT, `CREATE TABLE ${json(bad)}`);
      }
    }
    await expectStatus(c.executeUpdate('CREATE SCHEMA skade."x/y"'), Status.INVALID_ARGUMENT, 'CREATE SCHEMA x/y');
    eq(cli(['tables']).split('\n').filter((l) => l.startsWith('one.')).sort(), ['one.ing', 'one.items'],
      'no table was created');
  });

  await run('a table named like a namespace gets a folder of its own; ingest into both', async () => {
    await c.executeUpdate('CREATE SCHEMA skade."one.ing"');
    eq(await c.ingest(opts('ing', 'one.ing', CREATE, FAIL), batch([7n], ['n'], [7])), 1, 'nested namespace one.ing');
    const outer = JSON.parse(cli(['inspect', 'one.ing', '--json'])).metadata.location;
    const inner = JSON.parse(cli(['inspect', 'one.ing.ing', '--json'])).metadata.location;
    check(!(inner + '/').startsWith(outer + '/') && !(outer + '/').startsWith(inner + '/'),
      `${inner} and ${outer} overlap`);
    eq(await ingRows(), [{ id: '9', s: 'z', f: 9.5 }], 'the outer table is unchanged');
  });

  await stopServer(server);
};

groups.sessions = async () => {
  const server = await Server.start('rw');
  const c = server.client({ cookies: true });
  const value = (opts, key) => opts.session_options[key];

  await run('no session without session options: queries and metadata calls set no cookie', async () => {
    await rows(c, 'SELECT 1 AS one');
    await sqlInfo(c, [0]);
    eq(c.sessionCookie(), null, 'cookie after plain calls');
  });

  await run('SetSessionOptions starts a session (cookie), later calls keep it', async () => {
    const res = await c.setSessionOptions({ catalog: { string_value: 'skade' } });
    eq(res.errors, {}, 'errors');
    const first = c.sessionCookie();
    check(first, `no arrow_flight_session_id cookie; cookies ${json([...c.cookies])}`);
    // The cookie is sealed (it carries the session's options for any server of the deployment):
    // base64url text, at least nonce + tag + header long, with nothing of the options readable.
    check(/^[A-Za-z0-9_-]{55,}$/.test(first), `session id ${json(first)} is not a sealed base64url token`);
    check(!Buffer.from(first, 'base64url').toString('latin1').includes('skade'), 'the cookie shows its options');
    await rows(c, 'SELECT 1 AS one');
    eq(c.sessionCookie(), first, 'session id after a query');
  });

  await run('SetSessionOptions catalog/schema, GetSessionOptions, unqualified names', async () => {
    const res = await c.setSessionOptions({ catalog: { string_value: 'skade' }, schema: { string_value: 'a.b' } });
    eq(res.errors, {}, 'errors');
    const got = await c.getSessionOptions();
    eq(value(got, 'catalog')?.string_value, 'skade', 'catalog option');
    eq(value(got, 'schema')?.string_value, 'a.b', 'schema option');
    eq(await rows(c, 'SELECT count(*) AS n FROM orders'), [{ n: '3' }], 'unqualified orders');
    eq((await c.setSessionOptions({ schema: { string_value: 'x.y.z' } })).errors, {}, 'errors');
    eq(await rows(c, 'SELECT k FROM deep ORDER BY k'), [{ k: 10 }, { k: 20 }], 'unqualified deep');
  });

  await run('SetSessionOptions: unknown option name is INVALID_NAME', async () => {
    const res = await c.setSessionOptions({ bogus_option: { string_value: 'x' } });
    eq(res.errors, { bogus_option: { value: 1 } }, 'errors');
  });

  await run('a ticket keeps the schema of the session that made it, fetched without a cookie', async () => {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: 'SELECT k FROM deep ORDER BY k' });
    const cookieless = server.client({ cookies: false });
    eq(rowsOf((await cookieless.doGet(info.endpoint[0].ticket.ticket)).table), [{ k: 10 }, { k: 20 }],
      'DoGet without a cookie');
  });

  await run('sessions are separate: options and state do not leak to another client', async () => {
    const other = server.client({ cookies: true });
    await expectAlive(other);
    await expectStatus(other.query('CommandStatementQuery', { query: 'SELECT k FROM deep' }),
      Status.INVALID_ARGUMENT, 'unqualified name without a session');
    eq((await other.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'other sets its schema');
    check(other.sessionCookie() && other.sessionCookie() !== c.sessionCookie(), 'the sessions share an id');
    eq(await rows(other, 'SELECT count(*) AS n FROM items'), [{ n: '3' }], 'other resolves in its schema');
    eq(await rows(c, 'SELECT count(*) AS n FROM deep'), [{ n: '2' }], 'first session still has its schema');
  });

  await run('CloseSession, then the closed session id is NOT_FOUND', async () => {
    const stale = c.clone();
    const res = await c.closeSession();
    eq(res.status, 1, 'CloseSessionResult.status (CLOSED)');
    await expectStatus(stale.query('CommandStatementQuery', { query: 'SELECT 1 AS one' }), Status.NOT_FOUND,
      'call with the closed session cookie');
    const fresh = server.client({ cookies: true });
    await expectAlive(fresh);
  });

  await run('500 cookie-less calls create no session: a session can still be made', async () => {
    const many = server.client({ cookies: false });
    for (let i = 0; i < 500; i++) await sqlInfo(many, [0]);
    const later = server.client({ cookies: true });
    eq((await later.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'errors');
    eq(await rows(later, 'SELECT count(*) AS n FROM items'), [{ n: '3' }], 'session works');
  });

  await stopServer(server);

  const limited = await Server.start('max2', ['--max-sessions', '2']);
  await run('--max-sessions 2: one client opening sessions locks nobody out (least recently used is forgotten)',
    async () => {
      const victim = limited.client({ cookies: true });
      eq((await victim.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'victim session');
      const hog = [];
      for (let i = 0; i < 10; i++) {
        const h = limited.client({ cookies: true });
        eq((await h.setSessionOptions({ schema: { string_value: 'a.b' } })).errors, {}, `hog session ${i}`);
        hog.push(h);
      }
      // The victim's session was the least recently used: the server forgot it, and takes it back
      // from its cookie (which carries its options) when the victim calls again.
      eq(await rows(victim, 'SELECT count(*) AS n FROM items'), [{ n: '3' }], 'the evicted session, from its cookie');
      // Every other client still works: cookie-less, and with a new session.
      await expectAlive(limited.client({ cookies: false }));
      const fresh = limited.client({ cookies: true });
      eq((await fresh.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'a new session');
      eq(await rows(fresh, 'SELECT count(*) AS n FROM items'), [{ n: '3' }], 'the new session resolves names');
      eq(await rows(hog[9], 'SELECT count(*) AS n FROM orders'), [{ n: '3' }], 'the newest hog session');
    });
  await stopServer(limited);
};

groups.cancel = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const longQuery = 'SELECT sum(range % 7) AS s FROM range(1000000000000)';

  await run('CancelFlightInfo before DoGet: the ticket is dead', async () => {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: 'SELECT * FROM range(10)' });
    const status = await c.cancelFlightInfo(info);
    check([1, 2].includes(status), `CancelFlightInfoResult.status ${status} (want CANCELLED or CANCELLING)`);
    await expectStatus(c.doGet(info.endpoint[0].ticket.ticket), Status.CANCELLED,
      'DoGet of the cancelled ticket');
    await expectAlive(c);
  });

  await run('CancelQuery (deprecated) before DoGet: the ticket is dead', async () => {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: 'SELECT * FROM range(10)' });
    const result = await c.cancelQuery(info);
    check([1, 2].includes(result), `ActionCancelQueryResult.result ${result} (want CANCELLED or CANCELLING)`);
    await expectStatus(c.doGet(info.endpoint[0].ticket.ticket), Status.CANCELLED,
      'DoGet of the cancelled ticket');
  });

  // CPU seconds the server process has used so far (utime + stime, /proc/PID/stat).
  const cpuSeconds = () => {
    const stat = fs.readFileSync(`/proc/${server.child.pid}/stat`, 'utf8');
    const fieldsAfterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fieldsAfterName[11]) + Number(fieldsAfterName[12])) / 100;
  };
  // Starts the long query, cancels it with `cancel(info)` once DoGet runs, and checks DoGet ends
  // CANCELLED quickly.
  async function cancelRunning(cancel) {
    const slow = new Error('GetFlightInfo of a long query did not return within 5 s (it runs the query)');
    const info = await Promise.race([
      c.getFlightInfo('CommandStatementQuery', { query: longQuery }),
      new Promise((_, reject) => setTimeout(() => reject(slow), 5000)),
    ]);
    const started = Date.now();
    const cpuAtStart = cpuSeconds();
    const get = c.doGet(info.endpoint[0].ticket.ticket);
    get.catch(() => {});
    // Running: the server has computed for a while (a cancel that comes first is the case above).
    for (let i = 0; i < 200 && cpuSeconds() - cpuAtStart < 0.2; i++) await new Promise((r) => setTimeout(r, 50));
    const result = await cancel(info);
    check([1, 2].includes(result), `cancel result ${result} (want CANCELLED or CANCELLING)`);
    await expectStatus(get, Status.CANCELLED, 'DoGet of the running query');
    const took = Date.now() - started;
    check(took < 10000, `cancelled DoGet took ${took} ms`);
    await expectAlive(c);
  }

  // Starts the long query with DoGet, lets it run, then ends the call from the client side with
  // `end(call)`; the server must stop computing: a quiet half second within the next 5 s.
  async function stopsWhenTheClientLeaves(what, end, deadlineMs = 20000) {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: longQuery });
    const call = c.stub.DoGet({ ticket: info.endpoint[0].ticket.ticket }, c.metadata(),
      { deadline: new Date(Date.now() + deadlineMs) });
    call.on('data', () => {});
    const ended = new Promise((resolve) => call.on('error', resolve).on('end', resolve));
    await new Promise((r) => setTimeout(r, 700));
    const busy = cpuSeconds();
    end(call);
    await ended;
    // A query still running keeps a core busy; a stopped one leaves the server idle. Within
    // 5 s (a loaded machine delays the interrupt's check) one half second must be quiet.
    const windows = [];
    for (let i = 0; i < 10; i++) {
      const before = cpuSeconds();
      check(before - busy >= 0, 'cpu clock went backwards');
      await new Promise((r) => setTimeout(r, 500));
      windows.push(cpuSeconds() - before);
      if (windows[windows.length - 1] < 0.1) break;
    }
    check(windows[windows.length - 1] < 0.1,
      `${what}: the server kept computing (CPU s per half second after: ${windows.map((u) => u.toFixed(2)).join(', ')})`);
    await expectAlive(c);
  }

  await run('a client that disconnects stops its running query', () =>
    stopsWhenTheClientLeaves('cancelled call', (call) => call.cancel()));
  await run("a client's passed deadline stops its running query", () =>
    stopsWhenTheClientLeaves('deadline 1.2 s', () => {}, 1200));

  await run('CancelFlightInfo on a finished query is NOT_CANCELLABLE', async () => {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: 'SELECT 1 AS one' });
    await c.doGet(info.endpoint[0].ticket.ticket);
    eq(await c.cancelFlightInfo(info), 3, 'CancelFlightInfoResult.status of a fetched query (NOT_CANCELLABLE)');
    eq(rowsOf((await c.doGet(info.endpoint[0].ticket.ticket)).table), [{ one: 1 }], 'the ticket still redeems');
    const other = { ...info, endpoint: [{ ticket: { ticket: c.proto.pack('TicketStatementQuery',
      { statement_handle: Buffer.from('0'.repeat(32)) }) } }] };
    eq(await c.cancelFlightInfo(other), 3, 'CancelFlightInfoResult.status of an unknown statement (NOT_CANCELLABLE)');
  });

  await run('CancelFlightInfo stops a running query', () => cancelRunning((info) => c.cancelFlightInfo(info)));
  await run('CancelQuery stops a running query', () => cancelRunning((info) => c.cancelQuery(info)));

  await stopServer(server);

  const timed = await Server.start('timeout', ['--query-timeout', '1']);
  await run('--query-timeout 1: a long query ends DEADLINE_EXCEEDED and the server keeps serving', async () => {
    const t = timed.client();
    const started = Date.now();
    const info = await t.getFlightInfo('CommandStatementQuery', { query: longQuery });
    await expectStatus(t.doGet(info.endpoint[0].ticket.ticket), Status.DEADLINE_EXCEEDED, 'DoGet of the long query');
    const took = Date.now() - started;
    check(took >= 900 && took < 8000, `the query ended after ${took} ms`);
    await expectAlive(t);
    const info100 = await sqlInfo(t, [100, 101]);
    eq(info100.get(100).value, 1000, 'FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT (milliseconds)');
    eq(info100.get(101).value, 0, 'FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT (none)');
  });
  await stopServer(timed);

  const idle = await Server.start('idle', ['--session-idle-timeout', '1', '--handle-lifetime', '1']);
  await run('--session-idle-timeout 1 --handle-lifetime 1: idle sessions and tickets, old prepared statements close',
    async () => {
      const a = idle.client({ cookies: true });
      eq((await a.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'errors');
      // A session in use outlives the idle timeout: each call renews its cookie in time.
      const busy = idle.client({ cookies: true });
      eq((await busy.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'errors');
      const t = idle.client();
      const info = await t.getFlightInfo('CommandStatementQuery', { query: 'SELECT 1 AS one' });
      const p = await t.prepare('SELECT 2 AS two');
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 300));
        eq(await rows(busy, 'SELECT count(*) AS n FROM items'), [{ n: '3' }], `the busy session, call ${i}`);
      }
      await new Promise((r) => setTimeout(r, 200));
      await expectStatus(a.query('CommandStatementQuery', { query: 'SELECT 1 AS one' }), Status.NOT_FOUND,
        'the idle session');
      await expectStatus(t.doGet(info.endpoint[0].ticket.ticket), Status.NOT_FOUND, 'the idle ticket');
      await expectStatus(t.preparedQuery(p.handle), Status.NOT_FOUND, 'the expired prepared statement');
      await expectAlive(idle.client());
    });
  await stopServer(idle);
};

// Statements every write path is tried with (read-only refusals).
function writeStatements() {
  return [
    "INSERT INTO skade.one.items VALUES (50, 'no')",
    'INSERT INTO skade.one.items SELECT id + 100, label FROM skade.one.items',
    'DELETE FROM skade.one.items WHERE id = 1',
    'DELETE FROM skade.one.items',
    'CREATE TABLE skade.one.nt (id BIGINT)',
    'CREATE TABLE skade.one.nt2 AS SELECT * FROM skade.one.items',
    'DROP TABLE skade.one.items',
    'CREATE SCHEMA skade.ro_schema',
    'DROP SCHEMA skade.x',
    'CREATE VIEW v AS SELECT * FROM skade.one.items',
    'CREATE TEMP TABLE tt (id BIGINT)',
    'CREATE TEMP TABLE tt2 AS SELECT 1 AS x',
  ];
}

// Statements that would reach the server's files outside the lake, the network or extension
// settings. SELECTs are only tried as queries (a server may reject a SELECT sent as an update for
// that reason alone). outside.csv is a readable file next to the warehouse folder.
function escapeStatements() {
  const tmp = args.tmp;
  fs.writeFileSync(path.join(tmp, 'outside.csv'), 'a,b\n1,2\n');
  return [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
    `SELECT * FROM read_csv('${tmp}/outside.csv')`,
    `SELECT * FROM read_csv('${args.warehouse}/../outside.csv')`,
    `SELECT * FROM '${tmp}/outside.csv'`,
    "SELECT * FROM read_parquet('http://127.0.0.1:9/x.parquet')",
    `COPY (SELECT 1 AS x) TO '${tmp}/escaped.csv'`,
    `ATTACH '${tmp}/escaped.duckdb' AS escaped`,
    'INSTALL httpfs',
    'LOAD httpfs',
    'SET enable_external_access = true',
    `SET extension_directory = '${tmp}/ext'`,
    `SET home_directory = '${tmp}'`,
  ];
}

// Runs `sql` as a statement update (unless it is a SELECT) and as a query; both must end
// PERMISSION_DENIED.
async function expectRefused(c, sql) {
  if (!/^SELECT/i.test(sql)) {
    await expectStatus(c.executeUpdate(sql), Status.PERMISSION_DENIED, `StatementUpdate ${sql}`);
  }
  await expectStatus(c.query('CommandStatementQuery', { query: sql }), Status.PERMISSION_DENIED,
    `StatementQuery ${sql}`);
}

// Prepares `sql` and executes it as update (unless it is a SELECT) and as query; the refusal may
// come when preparing or when executing.
async function expectPreparedRefused(c, sql) {
  let p;
  try {
    p = await c.prepare(sql);
  } catch (e) {
    await expectStatus(Promise.reject(e), Status.PERMISSION_DENIED, `prepare ${sql}`);
    return;
  }
  if (!/^SELECT/i.test(sql)) {
    await expectStatus(c.preparedUpdate(p.handle), Status.PERMISSION_DENIED, `prepared update ${sql}`);
  }
  await expectStatus(c.preparedQuery(p.handle), Status.PERMISSION_DENIED, `prepared query ${sql}`);
  await c.closePrepared(p.handle);
}

groups.readonly = async () => {
  const before = cli(['tables']);
  const server = await Server.start('read-only', ['--read-only']);
  const c = server.client();

  await run('GetSqlInfo says read-only', async () => {
    const info = await sqlInfo(c, [0, 3]);
    eq(info.get(3).value, true, 'FLIGHT_SQL_SERVER_READ_ONLY');
  });

  await run('reads work', async () => {
    eq(await rows(c, ORDERS_SQL), LAKE.orders, 'orders');
    eq(rowsOf((await c.query('CommandGetTables', {})).table), LAKE.tables.map(tableRow), 'tables');
  });

  await run('StatementUpdate and StatementQuery writes/DDL are PERMISSION_DENIED', async () => {
    await forEachItem(writeStatements(), (sql) => expectRefused(c, sql));
  });

  await run('prepared writes are PERMISSION_DENIED', async () => {
    await forEachItem(["INSERT INTO skade.one.items VALUES (51, 'no')", 'DELETE FROM skade.one.items'],
      (sql) => expectPreparedRefused(c, sql));
    const select = await c.prepare('SELECT count(*) AS n FROM skade.one.items');
    eq(rowsOf((await c.preparedQuery(select.handle)).table), [{ n: '3' }], 'prepared SELECT still works');
    await c.closePrepared(select.handle);
  });

  await run('StatementIngest is PERMISSION_DENIED (append and create)', async () => {
    const t = arrowTable([['id', new Int64(), [60n]], ['label', new Utf8(), ['no']]]);
    const append = { if_not_exist: 2, if_exists: 2 };
    const create = { if_not_exist: 1, if_exists: 1 };
    await expectStatus(c.ingest({ table: 'items', schema: 'one', table_definition_options: append }, t),
      Status.PERMISSION_DENIED, 'append');
    await expectStatus(c.ingest({ table: 'ro_new', schema: 'one', table_definition_options: create }, t),
      Status.PERMISSION_DENIED, 'create');
  });

  await run('files, network and extension settings are PERMISSION_DENIED', async () => {
    await forEachItem(escapeStatements(), (sql) => expectRefused(c, sql));
    check(!fs.existsSync(path.join(args.tmp, 'escaped.csv')), 'COPY wrote a file');
    check(!fs.existsSync(path.join(args.tmp, 'escaped.duckdb')), 'ATTACH created a file');
  });

  await run('the lake is unchanged', async () => {
    eq(await rows(c, 'SELECT * FROM skade.one.items ORDER BY id'), LAKE.items, 'items');
    eq(rowsOf((await c.query('CommandGetDbSchemas', {})).table).map((r) => r.db_schema_name), LAKE.schemas, 'schemas');
    eq(cli(['tables']), before, 'skade tables');
    eq(cliRows('SELECT count(*) AS n FROM one.items'), [{ n: 3 }], 'skade sql');
  });

  await stopServer(server);
};

groups.lockdown = async () => {
  const server = await Server.start('rw');
  const c = server.client();

  await run('read-write server: files, network and extension settings are PERMISSION_DENIED', async () => {
    await forEachItem(escapeStatements(), (sql) => expectRefused(c, sql));
    check(!fs.existsSync(path.join(args.tmp, 'escaped.csv')), 'COPY wrote a file');
    check(!fs.existsSync(path.join(args.tmp, 'escaped.duckdb')), 'ATTACH created a file');
  });

  await run('prepared statements cannot reach files either', async () => {
    await forEachItem(["SELECT * FROM read_csv('/etc/passwd')", `COPY (SELECT 1 AS x) TO '${args.tmp}/escaped2.csv'`],
      (sql) => expectPreparedRefused(c, sql));
    check(!fs.existsSync(path.join(args.tmp, 'escaped2.csv')), 'prepared COPY wrote a file');
  });

  await run('statements smuggled behind string escapes never run (E\'\\\'\' DEFAULT, dollar quotes, comments)', async () => {
    const smuggled = [
      `CREATE TABLE skade.one.sm1 (a VARCHAR DEFAULT E'\\''); COPY (SELECT 1) TO '${args.warehouse}/catalog.db'; ` +
        `ATTACH '${args.tmp}/sm.duckdb' AS sm; CREATE MACRO m() AS 1; DETACH skade; ` +
        `CREATE TABLE skade.one.sm2 (b VARCHAR DEFAULT E'\\'')`,
      `INSERT INTO skade.one.items VALUES (E'\\'', 'x'); COPY (SELECT 1) TO '${args.tmp}/sm.csv'; SELECT ('`,
      `DELETE FROM skade.one.items WHERE label = $$x$$; COPY (SELECT 1) TO '${args.tmp}/sm.csv' --$$`,
    ];
    for (const sql of smuggled) {
      let refused = false;
      try {
        await c.executeUpdate(sql);
      } catch (e) {
        refused = e.code === Status.INVALID_ARGUMENT || e.code === Status.PERMISSION_DENIED;
      }
      check(refused, `not refused: ${sql}`);
    }
    check(!fs.existsSync(path.join(args.tmp, 'sm.duckdb')), 'ATTACH created a file');
    check(!fs.existsSync(path.join(args.tmp, 'sm.csv')), 'COPY wrote a file');
    check(cli(['tables']).split('\n').includes('one.items'), 'the catalog lost its tables (catalog.db overwritten?)');
    eq(cli(['tables']).split('\n').filter((l) => l.startsWith('one.sm')), [], 'no table was created');
  });

  await run('the server keeps serving', async () => {
    await expectAlive(c);
    eq(await rows(c, ORDERS_SQL), LAKE.orders, 'orders');
  });

  await stopServer(server);
};

groups.auth = async () => {
  const users = path.join(args.tmp, 'users.txt');
  fs.writeFileSync(users, 'alice:s3cret\nbob:hunter2\n');
  const server = await Server.start('auth', ['--auth', 'basic', '--users-file', users]);
  const anon = server.client();

  await run('calls without a token are UNAUTHENTICATED', async () => {
    await forEachItem([
      ['GetFlightInfo', () => anon.query('CommandStatementQuery', { query: 'SELECT 1 AS one' })],
      ['GetSchema', () => anon.getSchema('CommandGetCatalogs', {})],
      ['DoGet', () => anon.doGet(Buffer.from('ticket'))],
      ['DoPut', () => anon.executeUpdate('DELETE FROM skade.one.items')],
      ['DoAction', () => anon.prepare('SELECT 1 AS one')],
      ['ListActions', () => anon.listActions()],
    ], ([rpc, call]) => expectStatus(call(), Status.UNAUTHENTICATED, rpc));
    eq(cliRows('SELECT count(*) AS n FROM one.items'), [{ n: 3 }], 'the unauthenticated DELETE did nothing');
  });

  await run('Handshake with a wrong password or unknown user is UNAUTHENTICATED', async () => {
    await expectStatus(server.client().handshake('alice', 'wrong'), Status.UNAUTHENTICATED, 'wrong password');
    await expectStatus(server.client().handshake('mallory', 's3cret'), Status.UNAUTHENTICATED, 'unknown user');
    await expectStatus(server.client().handshake('alice', ''), Status.UNAUTHENTICATED, 'empty password');
  });

  await run('Handshake returns a bearer token that authorizes queries', async () => {
    const alice = server.client();
    const { token } = await alice.handshake('alice', 's3cret');
    check(token.length >= 16, `short token ${json(token)}`);
    eq(await rows(alice, ORDERS_SQL), LAKE.orders, 'orders as alice');
    const bob = server.client();
    const { token: bobToken } = await bob.handshake('bob', 'hunter2');
    check(bobToken !== token, 'alice and bob got the same token');
    eq(await rows(bob, 'SELECT count(*) AS n FROM skade.one.items'), [{ n: '3' }], 'as bob');
  });

  await run('a forged bearer token is UNAUTHENTICATED', async () => {
    const forged = server.client();
    forged.authorization = 'Bearer not-a-token';
    await expectStatus(forged.query('CommandStatementQuery', { query: 'SELECT 1 AS one' }), Status.UNAUTHENTICATED,
      'forged token');
  });

  await run("a statement handle is its user's: another user's call is NOT_FOUND", async () => {
    const alice = server.client();
    await alice.handshake('alice', 's3cret');
    const bob = server.client();
    await bob.handshake('bob', 'hunter2');
    const info = await alice.getFlightInfo('CommandStatementQuery', { query: 'SELECT 5 AS five' });
    const p = await alice.prepare('SELECT 6 AS six');
    await expectStatus(bob.doGet(info.endpoint[0].ticket.ticket), Status.NOT_FOUND, "bob redeems alice's ticket");
    await expectStatus(bob.preparedQuery(p.handle), Status.NOT_FOUND, "bob runs alice's prepared statement");
    await expectStatus(bob.closePrepared(p.handle), Status.NOT_FOUND, "bob closes alice's prepared statement");
    eq(rowsOf((await alice.doGet(info.endpoint[0].ticket.ticket)).table), [{ five: 5 }], 'alice redeems it');
    eq(rowsOf((await alice.preparedQuery(p.handle)).table), [{ six: 6 }], 'alice runs hers');
  });

  await run('the commit stream on the same port needs the same credentials', async () => {
    const watch = (extra, env = {}) => spawnSync(args.skade,
      ['--warehouse', args.warehouse, 'watch', '--server', server.address(), '--after', '1', '--count', '1', ...extra],
      { encoding: 'utf8', timeout: 30000, env: { ...process.env, ...env } });
    const anonymous = watch([]);
    check(anonymous.status !== 0 && /unauthori[sz]ed|unauthenticated|authentication/i.test(anonymous.stderr),
      `watch without credentials: exit ${anonymous.status}, stdout ${json(anonymous.stdout)}, ` +
      `stderr ${json(anonymous.stderr)}`);
    const wrong = watch(['--user', 'alice'], { SKADE_PASSWORD: 'wrong' });
    check(wrong.status !== 0, `watch with a wrong password: exit ${wrong.status}, stdout ${json(wrong.stdout)}`);
    const ok = watch(['--user', 'alice'], { SKADE_PASSWORD: 's3cret' });
    eq(ok.status, 0, `watch as alice: ${ok.stderr}`);
    eq(ok.stdout.trim().split('\n').length, 1, `one event printed: ${json(ok.stdout)}`);
  });

  await stopServer(server);

  const short = await Server.start('short-tokens', ['--auth', 'basic', '--users-file', users, '--token-lifetime', '3']);
  await run('--token-lifetime 3: a token expires, a new handshake renews', async () => {
    const alice = short.client();
    await alice.handshake('alice', 's3cret');
    await expectAlive(alice);
    await new Promise((r) => setTimeout(r, 3600));
    await expectStatus(alice.query('CommandStatementQuery', { query: 'SELECT 1 AS one' }), Status.UNAUTHENTICATED,
      'the expired token');
    await alice.handshake('alice', 's3cret');
    await expectAlive(alice);
  });
  await stopServer(short);
};

groups.tls = async () => {
  const cert = path.join(args.tmp, 'cert.pem');
  const key = path.join(args.tmp, 'key.pem');
  const otherCert = path.join(args.tmp, 'other-cert.pem');
  const otherKey = path.join(args.tmp, 'other-key.pem');
  for (const [c, k] of [[cert, key], [otherCert, otherKey]]) {
    const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', k, '-out', c,
      '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    { encoding: 'utf8', timeout: 60000 });
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  }
  const server = await Server.start('tls', ['--tls-cert', cert, '--tls-key', key]);

  await run('TLS client with the server certificate as root queries (localhost and 127.0.0.1)', async () => {
    eq(await rows(server.client({ host: 'localhost', rootCert: cert }), ORDERS_SQL), LAKE.orders, 'via localhost');
    eq(await rows(server.client({ rootCert: cert }), 'SELECT count(*) AS n FROM skade.one.items'), [{ n: '3' }],
      'via 127.0.0.1');
  });

  await run('plaintext client and untrusted root are refused', async () => {
    await expectStatus(server.client().query('CommandGetCatalogs', {}), Status.UNAVAILABLE, 'plaintext');
    await expectStatus(server.client({ host: 'localhost', rootCert: otherCert }).query('CommandGetCatalogs', {}),
      Status.UNAVAILABLE, 'untrusted certificate');
  });

  await stopServer(server);
};

groups.commits = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const summary = 'SELECT count(*) AS n, max(id) AS m FROM skade.one.items';

  await run('a skade ingest by another process is visible to the next query', async () => {
    eq(await rows(c, summary), [{ n: '3', m: '3' }], 'before');
    cli(['ingest', 'one.items', '--sql', "SELECT 100::BIGINT AS id, 'ext' AS label"]);
    eq(await rows(c, summary), [{ n: '4', m: '100' }], 'right after the commit');
    const p = await c.prepare('SELECT count(*) AS n FROM skade.one.items');
    cli(['ingest', 'one.items', '--sql', "SELECT 101::BIGINT AS id, 'ext2' AS label"]);
    eq(rowsOf((await c.preparedQuery(p.handle)).table), [{ n: '5' }], 'prepared before, run after the commit');
    await c.closePrepared(p.handle);
  });

  await run('a schema change by another process shows in GetTables schemas and in queries', async () => {
    const columns = async () => {
      const t = (await c.query('CommandGetTables', { db_schema_filter_pattern: 'one', table_name_filter_pattern: 'items',
        include_schema: true })).table;
      return schemaFromIpcMessage(t.getChild('table_schema').get(0)).fields.map((f) => f.name);
    };
    eq(await columns(), ['id', 'label'], 'before');
    cli(['alter', 'one.items', 'add-column', 'extra', 'INTEGER']);
    eq(await columns(), ['id', 'label', 'extra'], 'after add-column');
    eq(await rows(c, 'SELECT count(extra) AS n FROM skade.one.items'), [{ n: '0' }], 'the new column reads as NULL');
  });

  await run('an overwrite by another process replaces what the next query sees', async () => {
    cli(['ingest', 'one.items', '--mode', 'overwrite', '--sql', "SELECT 7::BIGINT AS id, 'only' AS label"]);
    eq(await rows(c, 'SELECT id, label FROM skade.one.items'), [{ id: '7', label: 'only' }], 'after overwrite');
  });

  await run('a table and namespace created by another process are listed and queryable', async () => {
    cli(['ns', 'create', 'p.q.r']);
    cli(['create', 'p.q.r.fresh', '--schema', 'id BIGINT, v VARCHAR']);
    cli(['ingest', 'p.q.r.fresh', '--sql', "SELECT 1::BIGINT AS id, 'new' AS v"]);
    eq(rowsOf((await c.query('CommandGetTables', { db_schema_filter_pattern: 'p%' })).table),
      [tableRow(['p.q.r', 'fresh'])], 'GetTables');
    eq(rowsOf((await c.query('CommandGetDbSchemas', { db_schema_filter_pattern: 'p%' })).table),
      ['p', 'p.q', 'p.q.r'].map(schemaRow), 'GetDbSchemas');
    eq(await rows(c, 'SELECT * FROM skade."p.q.r".fresh'), [{ id: '1', v: 'new' }], 'rows');
  });

  await stopServer(server);
};

groups.badinput = async () => {
  const server = await Server.start('rw');
  const c = server.client();
  const proto = c.proto;

  await run('malformed Any bytes are INVALID_ARGUMENT (GetFlightInfo, GetSchema, DoPut)', async () => {
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    await expectStatus(c.getFlightInfoRaw(garbage), Status.INVALID_ARGUMENT, 'GetFlightInfo');
    await expectStatus(c.getSchemaRaw(garbage), Status.INVALID_ARGUMENT, 'GetSchema');
    await expectStatus(c.doPutRaw(garbage), Status.INVALID_ARGUMENT, 'DoPut');
    await expectAlive(c);
  });

  await run('malformed command bytes inside a valid Any are INVALID_ARGUMENT', async () => {
    const bad = proto.packRaw('type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery',
      Buffer.from([0x0a, 0x20, 0x41]));
    await expectStatus(c.getFlightInfoRaw(bad), Status.INVALID_ARGUMENT, 'truncated CommandStatementQuery');
    const badUpdate = proto.packRaw('type.googleapis.com/arrow.flight.protocol.sql.CommandStatementUpdate',
      Buffer.from([0x0a, 0x20, 0x41]));
    await expectStatus(c.doPutRaw(badUpdate), Status.INVALID_ARGUMENT, 'truncated CommandStatementUpdate');
    await expectStatus(c.doAction('CreatePreparedStatement', Buffer.from([0xff, 0x00, 0x13])),
      Status.INVALID_ARGUMENT, 'malformed CreatePreparedStatement body');
    await expectAlive(c);
  });

  await run('unknown command types are INVALID_ARGUMENT', async () => {
    for (const url of ['type.googleapis.com/arrow.flight.protocol.sql.CommandDoesNotExist',
      'type.googleapis.com/google.protobuf.Empty', 'nonsense']) {
      const any = proto.packRaw(url, Buffer.alloc(0));
      await expectStatus(c.getFlightInfoRaw(any), Status.INVALID_ARGUMENT, `GetFlightInfo ${url}`);
      await expectStatus(c.doPutRaw(any), Status.INVALID_ARGUMENT, `DoPut ${url}`);
    }
    await expectAlive(c);
  });

  await run('a ticket outlives the session it was made in', async () => {
    const owner = server.client({ cookies: true });
    eq((await owner.setSessionOptions({ schema: { string_value: 'one' } })).errors, {}, 'errors');
    const info = await owner.getFlightInfo('CommandStatementQuery', { query: 'SELECT count(*) AS n FROM items' });
    eq((await owner.closeSession()).status, 1, 'CloseSession');
    eq(rowsOf((await server.client().doGet(info.endpoint[0].ticket.ticket)).table), [{ n: '3' }],
      'DoGet after the session closed');
    await expectAlive(c);
  });

  await run('a ticket works from any call: another session, another connection, no cookie', async () => {
    const owner = server.client();
    const info = await owner.getFlightInfo('CommandStatementQuery', { query: 'SELECT 2 AS two' });
    const ticket = info.endpoint[0].ticket.ticket;
    const other = server.client({ cookies: true });
    eq((await other.setSessionOptions({ schema: { string_value: 'a.b' } })).errors, {}, 'errors');
    eq(rowsOf((await other.doGet(ticket)).table), [{ two: 2 }], 'another session redeems it');
    eq(rowsOf((await server.client({ cookies: false }).doGet(ticket)).table), [{ two: 2 }], 'no cookie');
    eq(rowsOf((await owner.doGet(ticket)).table), [{ two: 2 }], 'owner redeems it again');
  });

  await run('statement handles are sealed: any changed bit is NOT_FOUND, the statement is not readable', async () => {
    const info = await c.getFlightInfo('CommandStatementQuery', { query: 'SELECT 3 AS three' });
    const handle = Buffer.from(c.proto.unpack('TicketStatementQuery', info.endpoint[0].ticket.ticket).statement_handle);
    check(!handle.toString('latin1').includes('three'), 'the handle shows its statement');
    for (const at of [0, 5, 20, handle.length - 1]) {
      const changed = Buffer.from(handle);
      changed[at] ^= 0x01;
      await expectStatus(c.doGet(c.proto.pack('TicketStatementQuery', { statement_handle: changed })),
        Status.NOT_FOUND, `the handle with byte ${at} changed`);
    }
    eq(rowsOf((await c.doGet(info.endpoint[0].ticket.ticket)).table), [{ three: 3 }], 'the handle itself');
  });

  await run('a made-up ticket is refused', async () => {
    await expectStatus(c.doGet(Buffer.from('made-up ticket')), [Status.NOT_FOUND, Status.INVALID_ARGUMENT],
      'made-up ticket');
    await expectAlive(c);
  });

  await run('error messages name no absolute server path', async () => {
    const wh = fs.realpathSync(args.warehouse);
    const e = await expectStatus(c.query('CommandStatementQuery',
      { query: `SELECT * FROM read_parquet('${wh}/one/no-such-file.parquet')` }),
    [Status.INVALID_ARGUMENT, Status.NOT_FOUND, Status.PERMISSION_DENIED], 'a missing file in the warehouse');
    check(!e.details.includes(wh), `the message shows the warehouse path: ${e.details}`);
    check(e.details.includes('<warehouse>/one/no-such-file.parquet'), `the message names the file: ${e.details}`);
  });

  await run('empty or blank SQL is INVALID_ARGUMENT (query, update, prepare)', async () => {
    await forEachItem(['', '   ', ';', '-- only a comment', '/* a comment */', ' ; ; '], async (sql) => {
      await expectStatus(c.query('CommandStatementQuery', { query: sql }), Status.INVALID_ARGUMENT, `query ${json(sql)}`);
      await expectStatus(c.executeUpdate(sql), Status.INVALID_ARGUMENT, `update ${json(sql)}`);
      await expectStatus(c.prepare(sql), Status.INVALID_ARGUMENT, `prepare ${json(sql)}`);
    });
    await expectAlive(c);
  });

  await run('SQL syntax errors are INVALID_ARGUMENT (query, update, prepare)', async () => {
    await expectStatus(c.query('CommandStatementQuery', { query: 'SELEC 1' }), Status.INVALID_ARGUMENT, 'query');
    await expectStatus(c.executeUpdate('INSERT INTO'), Status.INVALID_ARGUMENT, 'update');
    await expectStatus(c.prepare('SELECT FROM WHERE'), Status.INVALID_ARGUMENT, 'prepare');
    await expectAlive(c);
  });

  await run('a parameter batch with the wrong schema is INVALID_ARGUMENT', async () => {
    const p = await c.prepare('SELECT id FROM skade."a.b".orders WHERE id = ?');
    const name = p.parameterSchema.fields[0].name;
    const twoColumns = arrowTable([[name, new Int64(), [1n]], ['extra', new Int64(), [2n]]]);
    await expectStatus(c.bind(p.handle, twoColumns).then((h) => c.preparedQuery(h)),
      Status.INVALID_ARGUMENT, 'two columns for one parameter');
    const text = arrowTable([[name, new Utf8(), ['not a number']]]);
    await expectStatus(c.bind(p.handle, text).then((h) => c.preparedQuery(h)),
      Status.INVALID_ARGUMENT, 'text for a BIGINT parameter');
    const good = await c.bind(p.handle, arrowTable([[name, new Int64(), [2n]]]));
    eq(rowsOf((await c.preparedQuery(good)).table), [{ id: '2' }], 'a good binding still works');
    await c.closePrepared(good);
  });

  await run('a 10 MB SQL text is refused with a status', async () => {
    const huge = 'SELECT 1 AS one /* ' + 'x'.repeat(10 * 1024 * 1024) + ' */';
    await expectStatus(c.query('CommandStatementQuery', { query: huge }),
      [Status.RESOURCE_EXHAUSTED, Status.INVALID_ARGUMENT], 'StatementQuery');
    await expectStatus(c.prepare(huge), [Status.RESOURCE_EXHAUSTED, Status.INVALID_ARGUMENT], 'prepare');
    await expectAlive(c);
  });

  await run('DoPut without any message is INVALID_ARGUMENT', async () => {
    await expectStatus(c.bidi('DoPut', []).then(() => undefined), Status.INVALID_ARGUMENT, 'empty DoPut');
    await expectAlive(c);
  });

  await run('DoExchange, Substrait and transactions are UNIMPLEMENTED', async () => {
    await expectStatus(c.doExchange(proto.pack('CommandStatementQuery', { query: 'SELECT 1' })),
      Status.UNIMPLEMENTED, 'DoExchange');
    const plan = { plan: Buffer.from([1]), version: '0.1' };
    await expectStatus(c.query('CommandStatementSubstraitPlan', { plan }), Status.UNIMPLEMENTED,
      'CommandStatementSubstraitPlan');
    await expectStatus(c.sqlAction('CreatePreparedSubstraitPlan', 'ActionCreatePreparedSubstraitPlanRequest', { plan }),
      Status.UNIMPLEMENTED, 'CreatePreparedSubstraitPlan');
    await expectStatus(c.sqlAction('BeginTransaction', 'ActionBeginTransactionRequest', {}),
      Status.UNIMPLEMENTED, 'BeginTransaction');
    await expectAlive(c);
  });

  await stopServer(server);
};

// ---- main ----

async function main() {
  if (args.groups.length === 0) args.groups = Object.keys(groups);
  for (const g of args.groups) {
    if (!groups[g]) {
      console.error(`unknown group ${g}; groups: ${Object.keys(groups).join(' ')}`);
      process.exit(2);
    }
  }
  if (args.modes.length === 0) args.modes = ['cookies', 'cookieless'];
  let groupsRun = 0;
  for (const mode of args.modes) {
    if (!['cookies', 'cookieless'].includes(mode)) {
      console.error(`unknown mode ${mode}; modes: cookies cookieless`);
      process.exit(2);
    }
  }
  for (const mode of args.modes) {
    for (const g of args.groups) {
      if (mode === 'cookieless' && COOKIE_GROUPS.has(g)) continue;
      currentMode = mode;
      currentGroup = mode === 'cookies' ? g : `cookieless/${g}`;
      groupsRun++;
      try {
        await groups[g]();
      } catch (e) {
        failed++;
        out(`FAIL ${currentGroup}: ${describeError(e)}`);
      }
    }
  }
  out(`summary: ${passed} passed, ${failed} failed`);
  // A run whose groups are all skipped in its mode (sessions, cookie-less) passes empty.
  process.exit(failed === 0 && (passed > 0 || groupsRun === 0) ? 0 : 1);
}

main();
