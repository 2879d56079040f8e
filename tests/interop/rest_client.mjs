// Drives a live skade REST catalog with iceberg-js (an independent Iceberg REST client:
// IcebergRestCatalog) and prints what it sees as one JSON object per line ({"event": ..., ...})
// for rest_interop_test.cc to compare with skade's own view of the lake.
//   node rest_client.mjs --uri http://127.0.0.1:PORT [--token TOKEN] --step setup
//   node rest_client.mjs --uri http://127.0.0.1:PORT [--token TOKEN] --step append --commit FILE
// setup: namespaces ["rest"] and ["rest","nested"] (listed, loaded, properties updated), tables
//   rest.nested.t (schema id/region/amount, identity partition on region) and
//   rest.nested.scratch, listed and loaded (with If-None-Match), a set-properties commit with an
//   assert-table-uuid requirement and one whose requirement fails.
// append: commits FILE (a CommitTableRequest body skade's library wrote: add-snapshot and
//   set-snapshot-ref with assert-ref-snapshot-id) to rest.nested.t through updateTable, loads
//   the table, sends the same commit again (now stale), renames rest.nested.t to
//   rest.nested.events, drops rest.nested.scratch (purge) and lists the tables.
// The last line is {"event":"done"}; an unexpected error prints {"event":"error",...} and exits 1.
// Snapshot ids travel through JSON.parse as JavaScript numbers (iceberg-js has no 64-bit
// integer path), so the commit's ids must be below 2^53 to survive exactly.
import fs from 'node:fs';
import { IcebergRestCatalog, IcebergError, getCurrentSchema } from 'iceberg-js';

const args = {};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => process.argv[++i];
  if (a === '--uri') args.uri = next();
  else if (a === '--token') args.token = next();
  else if (a === '--step') args.step = next();
  else if (a === '--commit') args.commit = next();
  else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}
if (!args.uri || !['setup', 'append'].includes(args.step) || (args.step === 'append' && !args.commit)) {
  console.error('usage: node rest_client.mjs --uri URL [--token T] --step setup|append [--commit FILE]');
  process.exit(2);
}

const auth = args.token ? { type: 'bearer', token: args.token } : { type: 'none' };
const catalog = new IcebergRestCatalog({ baseUrl: args.uri, auth });

function say(event, fields = {}) {
  console.log(JSON.stringify({ event, ...fields }));
}

// An IcebergError as {status, type}; anything else is rethrown.
async function refusal(promise) {
  try {
    await promise;
    return { status: 200, type: null };
  } catch (e) {
    if (!(e instanceof IcebergError)) throw e;
    return { status: e.status, type: e.icebergType ?? null, conflict: e.isConflict(), not_found: e.isNotFound() };
  }
}

const NESTED = ['rest', 'nested'];
const T = { namespace: NESTED, name: 't' };
const SCRATCH = { namespace: NESTED, name: 'scratch' };
const EVENTS = { namespace: NESTED, name: 'events' };

function tableView(metadata) {
  const schema = getCurrentSchema(metadata);
  const spec = (metadata['partition-specs'] ?? []).find((s) => s['spec-id'] === metadata['default-spec-id']);
  return {
    uuid: metadata['table-uuid'],
    format_version: metadata['format-version'],
    location: metadata.location,
    fields: schema?.fields.map((f) => f.name) ?? [],
    field_types: schema?.fields.map((f) => f.type) ?? [],
    spec: spec?.fields.map((f) => ({ name: f.name, transform: f.transform, source_id: f['source-id'] })) ?? [],
    properties: metadata.properties ?? {},
    current_snapshot_id: metadata['current-snapshot-id'] ?? null,
    snapshots: (metadata.snapshots ?? []).length,
    last_sequence_number: metadata['last-sequence-number'] ?? null,
  };
}

async function setup() {
  const config = await catalog.loadConfig();
  say('config', { endpoints: config.endpoints ?? [], overrides: config.overrides, defaults: config.defaults });
  if (args.token) {
    const anonymous = new IcebergRestCatalog({ baseUrl: args.uri });
    say('unauthorized', await refusal(anonymous.listNamespaces()));
  }

  await catalog.createNamespace({ namespace: ['rest'] }, { properties: { owner: 'iceberg-js', tier: 'bronze' } });
  await catalog.createNamespace({ namespace: NESTED }, { properties: { purpose: 'interop' } });
  say('namespace-again', await refusal(catalog.createNamespace({ namespace: NESTED })));
  const top = await catalog.listNamespaces();
  const children = await catalog.listNamespaces({ parent: { namespace: ['rest'] } });
  say('namespaces', { top: top.namespaces.map((n) => n.namespace), children: children.namespaces.map((n) => n.namespace) });
  say('namespace', { namespace: NESTED, properties: (await catalog.loadNamespaceMetadata({ namespace: NESTED })).properties });
  const updated = await catalog.updateNamespaceProperties({ namespace: ['rest'] }, { removals: ['owner', 'absent'], updates: { tier: 'gold' } });
  say('properties-updated', {
    updated: updated.updated,
    removed: updated.removed,
    missing: updated.missing ?? null,
    after: (await catalog.loadNamespaceMetadata({ namespace: ['rest'] })).properties,
  });
  say('namespace-exists', {
    nested: await catalog.namespaceExists({ namespace: NESTED }),
    missing: await catalog.namespaceExists({ namespace: ['rest', 'missing'] }),
  });

  const created = await catalog.createTableResult({ namespace: NESTED }, {
    name: 't',
    schema: {
      type: 'struct',
      fields: [
        { id: 1, name: 'id', type: 'long', required: true },
        { id: 2, name: 'region', type: 'string', required: false },
        { id: 3, name: 'amount', type: 'double', required: false },
      ],
      'schema-id': 0,
    },
    'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }] },
    properties: { 'created-by': 'iceberg-js' },
  });
  say('created', { metadata_location: created['metadata-location'], ...tableView(created.metadata) });
  await catalog.createTable({ namespace: NESTED }, {
    name: 'scratch',
    schema: { type: 'struct', fields: [{ id: 1, name: 'k', type: 'int', required: false }] },
  });
  say('table-again', await refusal(catalog.createTable({ namespace: NESTED }, { name: 't', schema: { type: 'struct', fields: [] } })));
  say('tables', { identifiers: (await catalog.listTables({ namespace: NESTED })).identifiers });

  const loaded = await catalog.loadTableResult(T);
  say('loaded', { metadata_location: loaded['metadata-location'], etag: loaded.etag, ...tableView(loaded.metadata) });
  const unchanged = await catalog.loadTable(T, { ifNoneMatch: loaded.etag });
  say('not-modified', { is_null: unchanged === null });

  const uuid = loaded.metadata['table-uuid'];
  const committed = await catalog.commitTable(T, {
    requirements: [{ type: 'assert-table-uuid', uuid }],
    updates: [{ action: 'set-properties', updates: { owner: 'iceberg-js', 'write.format.default': 'parquet' } }],
  });
  say('committed', { metadata_location: committed['metadata-location'], ...tableView(committed.metadata) });
  const after = await catalog.loadTable(T, { ifNoneMatch: loaded.etag });
  say('modified', { is_null: after === null, properties: after?.properties ?? null });
  say('conflict', await refusal(catalog.updateTable(T, {
    requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }],
    updates: [{ action: 'set-properties', updates: { owner: 'mallory' } }],
  })));
}

async function append() {
  const request = JSON.parse(fs.readFileSync(args.commit, 'utf8'));
  const committed = await catalog.updateTable(T, request);
  const m = committed.metadata;
  say('appended', {
    metadata_location: committed['metadata-location'],
    main: m.refs?.main?.['snapshot-id'] ?? null,
    ...tableView(m),
  });
  const loaded = await catalog.loadTable(T);
  const current = (loaded.snapshots ?? []).find((s) => s['snapshot-id'] === loaded['current-snapshot-id']);
  say('loaded', {
    ...tableView(loaded),
    snapshot: current
      ? {
          id: current['snapshot-id'],
          parent: current['parent-snapshot-id'] ?? null,
          sequence_number: current['sequence-number'] ?? null,
          manifest_list: current['manifest-list'],
          summary: current.summary,
        }
      : null,
  });
  const refs = await catalog.loadTable(T, { snapshots: 'refs' });
  say('loaded-refs', { snapshots: (refs.snapshots ?? []).map((s) => s['snapshot-id']) });
  say('stale', await refusal(catalog.updateTable(T, request)));

  await catalog.renameTable({ source: T, destination: EVENTS });
  const renamed = await catalog.loadTable(EVENTS);
  say('renamed', {
    old_exists: await catalog.tableExists(T),
    new_exists: await catalog.tableExists(EVENTS),
    ...tableView(renamed),
  });
  say('load-old-name', await refusal(catalog.loadTable(T)));

  await catalog.dropTable(SCRATCH, { purge: true });
  say('dropped', { exists: await catalog.tableExists(SCRATCH), load: await refusal(catalog.loadTable(SCRATCH)) });
  say('drop-again', await refusal(catalog.dropTable(SCRATCH)));
  say('tables', { identifiers: (await catalog.listTables({ namespace: NESTED })).identifiers });
}

try {
  if (args.step === 'setup') await setup();
  else await append();
  say('done');
} catch (e) {
  say('error', {
    message: e?.message ?? String(e),
    status: e instanceof IcebergError ? e.status : null,
    type: e instanceof IcebergError ? e.icebergType ?? null : null,
    details: e instanceof IcebergError ? e.details ?? null : null,
  });
  process.exit(1);
}
