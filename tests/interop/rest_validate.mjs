// A scripted end-to-end run against a live skade REST catalog with plain fetch, every response
// checked against the Iceberg REST OpenAPI document with ajv (another project's JSON Schema
// validator): the status must be one the spec lists for the operation, and the body must match
// the schema the spec gives for that status (the operation's `responses`, following $refs into
// components/responses). Request URLs are built from the spec's path templates by operationId.
//   node rest_validate.mjs --uri http://127.0.0.1:PORT --spec FILE.yaml [--token TOKEN] [--table NS.NAME]
// Prints one line per response ("ok   <step>: <operationId> <status>" or "FAIL <step>: why",
// ajv's errors included) and a last line `summary: {"validated":N,"failed":M,"statuses":{...}}`.
// Works in namespaces "spec" and "spec"."inner" (which must not exist yet). --table names an
// existing table with snapshots (one-level namespace): it is loaded (all snapshots and refs
// only) and committed to with an assert-ref-snapshot-id requirement on its current snapshot id,
// sent as the exact digits the server answered (JSON.parse would round a 64-bit id), then once
// more with that requirement stale. Exits 1 if any check failed.
import fs from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

const args = {};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => process.argv[++i];
  if (a === '--uri') args.uri = next().replace(/\/+$/, '');
  else if (a === '--spec') args.spec = next();
  else if (a === '--token') args.token = next();
  else if (a === '--table') args.table = next();
  else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}
if (!args.uri || !args.spec) {
  console.error('usage: node rest_validate.mjs --uri URL --spec FILE.yaml [--token TOKEN]');
  process.exit(2);
}

// ---- the spec: the whole OpenAPI document added to one ajv instance under SPEC_ID

const SPEC_ID = 'urn:iceberg:rest-catalog-open-api';
const doc = YAML.parse(fs.readFileSync(args.spec, 'utf8'));
// OpenAPI 3.1 schemas are JSON Schema 2020-12 (with 3.0's `nullable`, which ajv knows, and
// `discriminator`/`example`, which strict: false lets it ignore).
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
// OpenAPI's numeric formats (not JSON Schema's): int64 values are checked for being integers.
ajv.addFormat('int32', { type: 'number', validate: (n) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isInteger(n) });
ajv.addFormat('float', { type: 'number', validate: () => true });
ajv.addFormat('double', { type: 'number', validate: () => true });
// Two places where the document's JSON Schema says less than its OpenAPI intent, adjusted in
// memory (the file is not changed):
// - A oneOf with a `discriminator` mapping selects its branch by the property's value (OpenAPI);
//   plain JSON Schema instead demands that exactly one branch matches, and the spec's branches
//   overlap (EmptyPlanningResult also admits status "submitted", which maps to
//   AsyncPlanningResult). Each mapping entry becomes an if/then on the property.
// - PrimitiveTypeValue is a oneOf of untyped JSON values whose type comes from the table schema,
//   which a validator does not have: the string "r0" is a valid StringTypeValue, DecimalTypeValue
//   and BinaryTypeValue alike, and 3 is an integer, long, float and double. It is checked as anyOf.
function adjust(node) {
  if (Array.isArray(node)) {
    node.forEach(adjust);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (node.oneOf && node.discriminator?.propertyName && node.discriminator.mapping) {
    const prop = node.discriminator.propertyName;
    const mapping = node.discriminator.mapping;
    delete node.oneOf;
    node.required = [...new Set([...(node.required ?? []), prop])];
    node.properties = { ...(node.properties ?? {}), [prop]: { enum: Object.keys(mapping) } };
    node.allOf = [...(node.allOf ?? []), ...Object.entries(mapping).map(([value, ref]) => ({
      if: { properties: { [prop]: { const: value } }, required: [prop] },
      then: { $ref: ref },
    }))];
  }
  for (const v of Object.values(node)) adjust(v);
}
adjust(doc);
const primitive = doc.components.schemas.PrimitiveTypeValue;
primitive.anyOf = primitive.oneOf;
delete primitive.oneOf;
ajv.addSchema(doc, SPEC_ID);

// operationId → {template, method, operation}
const operations = new Map();
for (const [template, item] of Object.entries(doc.paths)) {
  for (const method of ['get', 'put', 'post', 'delete', 'head', 'patch']) {
    if (item[method]?.operationId) operations.set(item[method].operationId, { template, method, op: item[method] });
  }
}

function resolveRef(ref) {
  if (!ref.startsWith('#/')) throw new Error(`unsupported $ref ${ref}`);
  let node = doc;
  for (const part of ref.slice(2).split('/')) node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  if (node === undefined) throw new Error(`dangling $ref ${ref}`);
  return node;
}

// An inline schema with its document-relative $refs made absolute, so it compiles on its own.
function absoluteRefs(schema) {
  if (Array.isArray(schema)) return schema.map(absoluteRefs);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#') ? SPEC_ID + v : absoluteRefs(v);
  }
  return out;
}

const compiled = new Map();
function validatorFor(schema) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) {
    compiled.set(key, ajv.compile(schema.$ref ? { $ref: SPEC_ID + schema.$ref } : absoluteRefs(schema)));
  }
  return compiled.get(key);
}

// The spec's response object of an operation for a status: exact, then "4XX"-style, then
// default; null when the spec does not list it.
function specResponse(op, status) {
  const responses = op.responses ?? {};
  let r = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  if (!r) return null;
  while (r.$ref) r = resolveRef(r.$ref);
  return r;
}

function schemaName(schema) {
  return schema.$ref ? schema.$ref.split('/').pop() : 'inline schema';
}

// ---- checks

let validated = 0;
let lastText = '';  // the raw body of the last response
let failed = 0;
const statuses = {};

function fail(step, why) {
  ++failed;
  console.log(`FAIL ${step}: ${why}`);
}

function check(step, cond, why) {
  if (!cond) fail(step, why);
  return cond;
}

function ajvErrors(validate) {
  return ajv.errorsText(validate.errors, { separator: '; ', dataVar: 'body' });
}

function urlOf(template, params, query) {
  let path = template.replace('/{prefix}', '');
  for (const [name, value] of Object.entries(params ?? {})) {
    // Spec parameter `namespace`: the levels joined by the unit separator (0x1F), encoded.
    const encoded = Array.isArray(value) ? value.map(encodeURIComponent).join('%1F') : encodeURIComponent(value);
    path = path.replace(`{${name}}`, encoded);
  }
  if (/\{[^}]+\}/.test(path)) throw new Error(`unfilled path parameter in ${path}`);
  const qs = new URLSearchParams(query ?? {}).toString();
  return args.uri + path + (qs ? `?${qs}` : '');
}

// Calls operation `operationId` and validates the response. `expect` is the status the step
// must get; `errorType` the Iceberg exception type an error body must name. A request `body`
// (an object) is first validated against the operation's request schema, unless `rawBody`
// (a string sent as is) is given. Returns {status, body, headers}.
async function call(step, operationId, { params, query, body, rawBody, headers, expect, errorType, token } = {}) {
  const entry = operations.get(operationId);
  if (!entry) throw new Error(`no operation ${operationId} in the spec`);
  const { template, method, op } = entry;
  if (body !== undefined) {
    const reqSchema = op.requestBody?.content?.['application/json']?.schema;
    if (reqSchema) {
      const v = validatorFor(reqSchema);
      check(step, v(body), `the test's own ${schemaName(reqSchema)} request is not spec-valid: ${ajvErrors(v)}`);
    }
  }
  const h = { ...(headers ?? {}) };
  const bearer = token === undefined ? args.token : token;
  if (bearer) h.Authorization = `Bearer ${bearer}`;
  let payload;
  if (rawBody !== undefined) payload = rawBody;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined) h['Content-Type'] = 'application/json';
  const res = await fetch(urlOf(template, params, query), { method: method.toUpperCase(), headers: h, body: payload });
  const text = await res.text();
  lastText = text;
  const label = `${operationId} ${method.toUpperCase()} ${res.status}`;
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  let parsed;
  const before = failed;
  if (expect !== undefined) check(step, res.status === expect, `${label}: expected status ${expect}; body ${text}`);
  const spec = specResponse(op, res.status);
  if (!spec) {
    fail(step, `${label}: the spec lists no response ${res.status} for ${operationId}`);
  } else {
    const schema = spec.content?.['application/json']?.schema;
    if (!schema || method === 'head') {
      // The spec gives no body for this status (204, 304), and a HEAD response has none.
      check(step, text === '', `${label}: the spec gives no content for ${res.status} but the body is ${text}`);
    } else {
      const type = res.headers.get('content-type') ?? '';
      check(step, type.startsWith('application/json'), `${label}: Content-Type '${type}', not application/json`);
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        fail(step, `${label}: the body is not JSON: ${text}`);
      }
      if (parsed !== undefined) {
        const v = validatorFor(schema);
        ++validated;
        check(step, v(parsed), `${label}: the body is not a valid ${schemaName(schema)}: ${ajvErrors(v)}; body ${text}`);
      }
    }
  }
  if (res.status >= 400 && parsed?.error) {
    check(step, parsed.error.code === res.status, `${label}: error.code ${parsed.error.code} is not the status`);
    if (errorType) check(step, parsed.error.type === errorType, `${label}: error.type ${parsed.error.type}, want ${errorType}`);
  }
  if (failed === before) console.log(`ok   ${step}: ${label}`);
  return { status: res.status, body: parsed, headers: res.headers };
}

// ---- the run

const SCHEMA = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'region', required: false, type: 'string' },
    { id: 3, name: 'at', required: false, type: 'timestamptz' },
  ],
};
const SPEC = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }] };
const NS = ['spec'];
const INNER = ['spec', 'inner'];
const tableParams = (ns, table) => ({ namespace: ns, table });
const ident = (ns, name) => ({ namespace: ns, name });

try {
  const config = await call('config', 'getConfig', { expect: 200 });
  check('config', Array.isArray(config.body?.endpoints) && config.body.endpoints.includes('POST /v1/{prefix}/transactions/commit'),
    'the endpoints list lacks the transaction commit');
  if (args.token) {
    await call('unauthorized', 'listNamespaces', { token: '', expect: 401, errorType: 'NotAuthorizedException' });
    await call('forged token', 'getConfig', { token: 'forged', expect: 401, errorType: 'NotAuthorizedException' });
  }

  // Namespaces.
  const created = await call('create namespace', 'createNamespace', {
    body: { namespace: NS, properties: { owner: 'spec-run', tier: 'bronze' } }, expect: 200,
  });
  check('create namespace', isDeepStrictEqual(created.body?.namespace, NS), `namespace ${JSON.stringify(created.body?.namespace)}`);
  await call('create nested namespace', 'createNamespace', { body: { namespace: INNER }, expect: 200 });
  await call('create existing namespace', 'createNamespace', {
    body: { namespace: NS }, expect: 409, errorType: 'AlreadyExistsException',
  });
  const all = await call('list namespaces', 'listNamespaces', { expect: 200 });
  check('list namespaces', all.body?.namespaces?.some((n) => isDeepStrictEqual(n, NS)), `no ["spec"] in ${JSON.stringify(all.body)}`);
  const children = await call('list children', 'listNamespaces', { query: { parent: NS.join('\x1f') }, expect: 200 });
  check('list children', isDeepStrictEqual(children.body?.namespaces, [INNER]), `children ${JSON.stringify(children.body)}`);
  const paged = await call('list paged', 'listNamespaces', { query: { pageToken: '', pageSize: '1' }, expect: 200 });
  check('list paged', paged.body?.namespaces?.length === 1 && 'next-page-token' in (paged.body ?? {}),
    `a page of one with a token: ${JSON.stringify(paged.body)}`);
  await call('list children of a missing namespace', 'listNamespaces', {
    query: { parent: 'nope' }, expect: 404, errorType: 'NoSuchNamespaceException',
  });
  const loadedNs = await call('load namespace', 'loadNamespaceMetadata', { params: { namespace: NS }, expect: 200 });
  check('load namespace', loadedNs.body?.properties?.owner === 'spec-run', `properties ${JSON.stringify(loadedNs.body)}`);
  await call('namespace exists', 'namespaceExists', { params: { namespace: INNER }, expect: 204 });
  await call('load missing namespace', 'loadNamespaceMetadata', {
    params: { namespace: ['nope'] }, expect: 404, errorType: 'NoSuchNamespaceException',
  });
  const props = await call('update properties', 'updateProperties', {
    params: { namespace: NS }, body: { removals: ['tier', 'absent'], updates: { owner: 'validator' } }, expect: 200,
  });
  check('update properties', isDeepStrictEqual(props.body?.updated, ['owner']) && isDeepStrictEqual(props.body?.removed, ['tier']) &&
    isDeepStrictEqual(props.body?.missing, ['absent']), `updated/removed/missing ${JSON.stringify(props.body)}`);
  await call('update properties conflicting', 'updateProperties', {
    params: { namespace: NS }, body: { removals: ['owner'], updates: { owner: 'x' } }, expect: 422,
    errorType: 'UnprocessableEntityException',
  });

  // Tables.
  const table = await call('create table', 'createTable', {
    params: { namespace: INNER },
    body: { name: 'events', schema: SCHEMA, 'partition-spec': SPEC, properties: { 'created-by': 'rest_validate' } },
    expect: 200,
  });
  const uuid = table.body?.metadata?.['table-uuid'];
  check('create table', typeof uuid === 'string' && typeof table.body?.['metadata-location'] === 'string',
    `no table-uuid or metadata-location: ${JSON.stringify(table.body)}`);
  await call('create second table', 'createTable', { params: { namespace: INNER }, body: { name: 'other', schema: SCHEMA }, expect: 200 });
  await call('create existing table', 'createTable', {
    params: { namespace: INNER }, body: { name: 'events', schema: SCHEMA }, expect: 409, errorType: 'AlreadyExistsException',
  });
  await call('create table in a missing namespace', 'createTable', {
    params: { namespace: ['nope'] }, body: { name: 't', schema: SCHEMA }, expect: 404, errorType: 'NoSuchNamespaceException',
  });
  const listed = await call('list tables', 'listTables', { params: { namespace: INNER }, expect: 200 });
  check('list tables', isDeepStrictEqual(listed.body?.identifiers, [ident(INNER, 'events'), ident(INNER, 'other')]),
    `identifiers ${JSON.stringify(listed.body)}`);
  const loaded = await call('load table', 'loadTable', { params: tableParams(INNER, 'events'), expect: 200 });
  const etag = loaded.headers.get('etag');
  check('load table', !!etag, 'no ETag');
  await call('load table unchanged', 'loadTable', {
    params: tableParams(INNER, 'events'), headers: { 'If-None-Match': etag }, expect: 304,
  });
  await call('load table refs', 'loadTable', { params: tableParams(INNER, 'events'), query: { snapshots: 'refs' }, expect: 200 });
  await call('table exists', 'tableExists', { params: tableParams(INNER, 'events'), expect: 204 });
  await call('load missing table', 'loadTable', {
    params: tableParams(INNER, 'missing'), expect: 404, errorType: 'NoSuchTableException',
  });
  await call('table does not exist', 'tableExists', { params: tableParams(INNER, 'missing'), expect: 404 });

  // Commits.
  const committed = await call('commit', 'updateTable', {
    params: tableParams(INNER, 'events'),
    body: {
      requirements: [{ type: 'assert-table-uuid', uuid }, { type: 'assert-current-schema-id', 'current-schema-id': 0 }],
      updates: [{ action: 'set-properties', updates: { owner: 'validator' } }, { action: 'remove-properties', removals: ['created-by'] }],
    },
    expect: 200,
  });
  check('commit', committed.body?.metadata?.properties?.owner === 'validator' && !('created-by' in (committed.body?.metadata?.properties ?? {})),
    `properties after commit ${JSON.stringify(committed.body?.metadata?.properties)}`);
  check('commit', committed.body?.['metadata-location'] !== table.body?.['metadata-location'], 'the metadata location did not move');
  await call('load table after commit', 'loadTable', {
    params: tableParams(INNER, 'events'), headers: { 'If-None-Match': etag }, expect: 200,
  });
  await call('failing commit', 'updateTable', {
    params: tableParams(INNER, 'events'),
    body: { requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 7 }], updates: [{ action: 'set-properties', updates: { owner: 'eve' } }] },
    expect: 409, errorType: 'CommitFailedException',
  });
  await call('commit with a wrong uuid', 'updateTable', {
    params: tableParams(INNER, 'events'),
    body: { requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }], updates: [] },
    expect: 409, errorType: 'CommitFailedException',
  });
  await call('commit to a missing table', 'updateTable', {
    params: tableParams(INNER, 'missing'),
    body: { requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] },
    expect: 404, errorType: 'NoSuchTableException',
  });
  await call('commit with an unknown update', 'updateTable', {
    params: tableParams(INNER, 'events'), rawBody: JSON.stringify({ requirements: [], updates: [{ action: 'do-magic' }] }),
    expect: 400, errorType: 'BadRequestException',
  });
  await call('commit with bad JSON', 'updateTable', {
    params: tableParams(INNER, 'events'), rawBody: '{"requirements": [', expect: 400, errorType: 'BadRequestException',
  });
  await call('create namespace with bad JSON', 'createNamespace', { rawBody: '{not json', expect: 400, errorType: 'BadRequestException' });
  const after = await call('load table after failures', 'loadTable', { params: tableParams(INNER, 'events'), expect: 200 });
  check('load table after failures', after.body?.['metadata-location'] === committed.body?.['metadata-location'] &&
    after.body?.metadata?.properties?.owner === 'validator', 'a refused commit changed the table');

  // Staged create, committed with assert-create.
  const staged = await call('stage create', 'createTable', {
    params: { namespace: INNER }, body: { name: 'staged', schema: SCHEMA, 'stage-create': true }, expect: 200,
  });
  check('stage create', !('metadata-location' in (staged.body ?? {})), 'a staged create has no metadata-location yet');
  await call('staged table is not there yet', 'tableExists', { params: tableParams(INNER, 'staged'), expect: 404 });
  const m = staged.body?.metadata ?? {};
  await call('commit staged create', 'updateTable', {
    params: tableParams(INNER, 'staged'),
    body: {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: m['table-uuid'] },
        { action: 'upgrade-format-version', 'format-version': m['format-version'] },
        { action: 'add-schema', schema: m.schemas?.[0], 'last-column-id': m['last-column-id'] },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: m['partition-specs']?.[0] },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': m['sort-orders']?.[0] },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-location', location: m.location },
        { action: 'set-properties', updates: { 'created-by': 'a staged create' } },
      ],
    },
    expect: 200,
  });

  // Metrics report.
  await call('report metrics', 'reportMetrics', {
    params: tableParams(INNER, 'events'),
    body: { 'report-type': 'commit-report', 'table-name': 'spec.inner.events', 'snapshot-id': 1, 'sequence-number': 1, operation: 'append', metrics: {} },
    expect: 204,
  });

  // Rename, transaction, register, drop.
  await call('rename', 'renameTable', {
    body: { source: ident(INNER, 'other'), destination: ident(NS, 'renamed') }, expect: 204,
  });
  await call('rename a missing table', 'renameTable', {
    body: { source: ident(INNER, 'other'), destination: ident(NS, 'renamed2') }, expect: 404, errorType: 'NoSuchTableException',
  });
  await call('renamed table is gone', 'tableExists', { params: tableParams(INNER, 'other'), expect: 404 });
  const change = (ns, name, schemaId, value) => ({
    identifier: ident(ns, name),
    requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': schemaId }],
    updates: [{ action: 'set-properties', updates: { txn: value } }],
  });
  await call('failing transaction', 'commitTransaction', {
    body: { 'table-changes': [change(INNER, 'events', 0, '1'), change(NS, 'renamed', 9, '1')] },
    expect: 409, errorType: 'CommitFailedException',
  });
  await call('transaction', 'commitTransaction', {
    body: { 'table-changes': [change(INNER, 'events', 0, '2'), change(NS, 'renamed', 0, '2')] }, expect: 204,
  });
  for (const [ns, name] of [[INNER, 'events'], [NS, 'renamed']]) {
    const t = await call(`load ${name} after the transaction`, 'loadTable', { params: tableParams(ns, name), expect: 200 });
    check(`load ${name} after the transaction`, t.body?.metadata?.properties?.txn === '2', `txn property ${JSON.stringify(t.body?.metadata?.properties)}`);
  }
  const renamed = await call('load renamed', 'loadTable', { params: tableParams(NS, 'renamed'), expect: 200 });
  await call('drop keeping files', 'dropTable', { params: tableParams(NS, 'renamed'), query: { purgeRequested: 'false' }, expect: 204 });
  await call('register', 'registerTable', {
    params: { namespace: NS }, body: { name: 'registered', 'metadata-location': renamed.body?.['metadata-location'] }, expect: 200,
  });
  await call('drop namespace that is not empty', 'dropNamespace', {
    params: { namespace: INNER }, expect: 409, errorType: 'NamespaceNotEmptyException',
  });
  for (const [ns, name] of [[NS, 'registered'], [INNER, 'staged']]) {
    await call(`drop ${name}`, 'dropTable', { params: tableParams(ns, name), query: { purgeRequested: 'true' }, expect: 204 });
  }
  await call('drop a missing table', 'dropTable', { params: tableParams(NS, 'registered'), expect: 404, errorType: 'NoSuchTableException' });
  await call('create scratch namespace', 'createNamespace', { body: { namespace: ['spec', 'scratch'] }, expect: 200 });
  await call('drop empty namespace', 'dropNamespace', { params: { namespace: ['spec', 'scratch'] }, expect: 204 });
  await call('drop missing namespace', 'dropNamespace', {
    params: { namespace: ['spec', 'scratch'] }, expect: 404, errorType: 'NoSuchNamespaceException',
  });

  if (args.table) {
    const [ns, name] = args.table.split('.');
    const params = tableParams([ns], name);
    const full = await call('load table with snapshots', 'loadTable', { params, expect: 200 });
    const raw = /"current-snapshot-id"\s*:\s*(-?\d+)/.exec(lastText)?.[1];
    const fullText = lastText;
    check('load table with snapshots', (full.body?.metadata?.snapshots?.length ?? 0) >= 2 && raw !== undefined,
      `want two snapshots and a current one: ${lastText.slice(0, 400)}`);
    const refs = await call('load table refs with snapshots', 'loadTable', { params, query: { snapshots: 'refs' }, expect: 200 });
    check('load table refs with snapshots', refs.body?.metadata?.snapshots?.length === 1, 'refs: only the snapshot main points at');
    const commit = (id) => `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":${id}}],` +
      `"updates":[{"action":"set-properties","updates":{"validated":"yes"}}]}`;
    const ok = await call('commit on the exact snapshot id', 'updateTable', { params, rawBody: commit(raw), expect: 200 });
    check('commit on the exact snapshot id', ok.body?.metadata?.properties?.validated === 'yes', 'property not set');
    await call('commit on a stale snapshot id', 'updateTable', {
      params, rawBody: commit((BigInt(raw) + 1n).toString()), expect: 409, errorType: 'CommitFailedException',
    });

    // Server-side planning: submitted or completed, polled, its plan tasks fetched, cancelled.
    const plan = await call('plan table scan', 'planTableScan', { params, body: { 'stats-fields': ['id'] }, expect: 200 });
    const planId = plan.body?.['plan-id'];
    check('plan table scan', typeof planId === 'string', 'a plan id');
    let result = plan;
    for (let i = 0; i < 1000 && result.body?.status === 'submitted'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      result = await call('fetch planning result', 'fetchPlanningResult', { params: { ...params, 'plan-id': planId }, expect: 200 });
    }
    check('fetch planning result', result.body?.status === 'completed', `status ${result.body?.status}`);
    let tasks = result.body?.['file-scan-tasks']?.length ?? 0;
    for (const task of result.body?.['plan-tasks'] ?? []) {
      const fetched = await call('fetch scan tasks', 'fetchScanTasks', { params, body: { 'plan-task': task }, expect: 200 });
      tasks += fetched.body?.['file-scan-tasks']?.length ?? 0;
    }
    check('fetch scan tasks', tasks >= 2, `want the table's files, got ${tasks} tasks`);
    await call('cancel planning', 'cancelPlanning', { params: { ...params, 'plan-id': planId }, expect: 204 });
    await call('fetch a cancelled plan', 'fetchPlanningResult', { params: { ...params, 'plan-id': planId }, expect: 200 });
    await call('fetch a missing plan', 'fetchPlanningResult', {
      params: { ...params, 'plan-id': 'no-such-plan' }, expect: 404, errorType: 'NoSuchPlanIdException',
    });
    await call('cancel a missing plan', 'cancelPlanning', {
      params: { ...params, 'plan-id': 'no-such-plan' }, expect: 404, errorType: 'NoSuchPlanIdException',
    });
    await call('fetch a missing plan task', 'fetchScanTasks', {
      params, body: { 'plan-task': 'nope' }, expect: 404, errorType: 'NoSuchPlanTaskException',
    });
    // The oldest snapshot's id as the server wrote it (exact digits), from the "snapshots" list.
    const oldest = /"snapshot-id"\s*:\s*(-?\d+)/.exec(fullText.slice(fullText.indexOf('"snapshots"')))?.[1];
    check('plan an incremental scan', oldest !== undefined && oldest !== raw, 'an older snapshot');
    const inc = await call('plan an incremental scan', 'planTableScan', {
      params, rawBody: `{"start-snapshot-id":${oldest},"end-snapshot-id":${raw}}`, expect: 200,
    });
    if (inc.body?.status === 'submitted') {
      await call('cancel the incremental plan', 'cancelPlanning', { params: { ...params, 'plan-id': inc.body['plan-id'] }, expect: 204 });
    }
  }
} catch (e) {
  fail('run', e?.stack ?? String(e));
}

console.log(`summary: ${JSON.stringify({ validated, failed, statuses })}`);
process.exit(failed === 0 ? 0 : 1);
