// Validates OpenLineage RunEvents (as skade emits them) against the official OpenLineage JSON
// schemas, with ajv (another project's JSON Schema 2020-12 validator) and ajv-formats:
//   node openlineage_validate.mjs --fixtures DIR --events FILE [--allow-custom key1,key2]
//                                 [--min-events N]
// DIR holds OpenLineage.json (the core spec), facets/*.json (one schema per facet) and
// registry/**/facets/*.json (facets that other producers register, e.g. Iceberg's commit and scan
// reports); they are read, never changed. FILE is JSON lines, one RunEvent a line (blank lines
// ignored).
//
// What is checked, per event:
//  - core: the event validates against `#/$defs/RunEvent` of the core schema, with formats
//    (date-time, uri, uuid) enforced; `eventType` is present (the schema lets it be absent,
//    skade always sends it); `run.runId` is a UUID (8-4-4-4-12 hex, no "urn:uuid:" prefix);
//    `schemaURL` is `<core $id>#/$defs/RunEvent` (the schema the event is checked against).
//  - every facet in run.facets, job.facets, inputs[].facets, inputs[].inputFacets,
//    outputs[].facets and outputs[].outputFacets: has `_producer` and `_schemaURL`; the
//    `_schemaURL` is `<facet schema $id>#/$defs/<Name>` naming a schema in DIR (else "unknown
//    facet schema", unless the facet key is allow-listed with --allow-custom as a custom facet);
//    <Name> is a facet definition of the kind the container holds (a RunFacet in run.facets, a
//    JobFacet in job.facets, a DatasetFacet in .facets of a dataset, an InputDatasetFacet in
//    inputFacets, an OutputDatasetFacet in outputFacets); the facet key is the one the facet
//    schema gives it (its top-level `properties`, e.g. "schema" for SchemaDatasetFacet,
//    "processing_engine" for ProcessingEngineRunFacet); and the facet object validates against
//    that definition. A facet with `"_deleted": true` (a deletion marker) is only checked for
//    `_producer`/`_schemaURL` and a known schema, not for the facet's own required fields.
//  - date-time values must also be RFC 3339 with an upper-case "T" separator and an explicit
//    offset ("Z" or +hh:mm): ajv-formats alone also admits "2024-01-01 10:00:00z" and
//    "+0100", which Java's ISO_OFFSET_DATE_TIME (Marquez) rejects.
// Exit 0 with `ok N events` on stdout when every event is valid (and at least --min-events
// events were read, default 0). Otherwise one line per problem on stderr,
// `event <line>: <core | facet location>: <path> <message>`, a summary on stdout, and exit 1.
// Exit 2 on usage errors, unreadable fixtures or events, or a line that is not JSON.
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

function usage(msg) {
  if (msg) console.error(msg);
  console.error('usage: node openlineage_validate.mjs --fixtures DIR --events FILE [--allow-custom key1,key2] [--min-events N]');
  process.exit(2);
}

const args = { allowCustom: new Set(), minEvents: 0 };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => {
    const v = process.argv[++i];
    if (v === undefined) usage(`${a} needs a value`);
    return v;
  };
  if (a === '--fixtures') args.fixtures = next();
  else if (a === '--events') args.events = next();
  else if (a === '--allow-custom') {
    for (const k of next().split(',').map((s) => s.trim()).filter(Boolean)) args.allowCustom.add(k);
  } else if (a === '--min-events') {
    args.minEvents = Number(next());
    if (!Number.isInteger(args.minEvents) || args.minEvents < 0) usage('--min-events needs a non-negative integer');
  } else if (a === '--help' || a === '-h') usage();
  else usage(`unknown argument ${a}`);
}
if (!args.fixtures || !args.events) usage('--fixtures and --events are required');

function die(msg) {
  console.error(msg);
  process.exit(2);
}

function readJson(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    die(`cannot read ${file}: ${e.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    die(`${file} is not JSON: ${e.message}`);
  }
}

// ---- the schemas

const core = readJson(path.join(args.fixtures, 'OpenLineage.json'));
const CORE_ID = core.$id;
if (typeof CORE_ID !== 'string' || !core.$defs?.RunEvent) die(`${args.fixtures}/OpenLineage.json has no $id or no $defs/RunEvent`);
const RUN_EVENT_URL = `${CORE_ID}#/$defs/RunEvent`;

const facetFiles = [];
const facetDir = path.join(args.fixtures, 'facets');
try {
  for (const f of fs.readdirSync(facetDir).sort()) if (f.endsWith('.json')) facetFiles.push(path.join(facetDir, f));
} catch (e) {
  die(`cannot read ${facetDir}: ${e.message}`);
}
// registry/<producer>/[<sub>/]facets/*.json: registered (non-core) facet schemas, such as
// registry/iceberg/facets/IcebergCommitReportOutputDatasetFacet.json.
function walkRegistry(dir) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walkRegistry(p);
    else if (e.name.endsWith('.json') && path.basename(dir) === 'facets') facetFiles.push(p);
  }
}
walkRegistry(path.join(args.fixtures, 'registry'));
if (facetFiles.length === 0) die(`no facet schemas under ${facetDir}`);

// The metadata keywords the OpenLineage schemas use beyond JSON Schema's own ("example", and
// "documentation" in LifecycleStateChangeDatasetFacet) are declared, so strictSchema can stay on:
// it is what makes an unknown "format" an error instead of being silently ignored. The other
// strict checks are about schema style, not data (strictRequired would reject the core's
// `"not": {"required": ["job", "run"]}`), and are off.
const ajv = new Ajv2020({ allErrors: true, strictSchema: true, strictNumbers: true, strictTypes: false, strictTuples: false, strictRequired: false });
ajv.addVocabulary(['example', 'documentation']);
addFormats(ajv);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;
const ajvDateTime = ajv.formats['date-time'];
const ajvDateTimeValidate = typeof ajvDateTime === 'function' ? ajvDateTime : ajvDateTime.validate;
ajv.addFormat('date-time', { type: 'string', validate: (s) => RFC3339.test(s) && ajvDateTimeValidate(s) });
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
ajv.addFormat('uuid', { type: 'string', validate: (s) => UUID.test(s) });

try {
  ajv.addSchema(core);
} catch (e) {
  die(`OpenLineage.json: ${e.message}`);
}

function collectRefs(node, out) {
  if (Array.isArray(node)) node.forEach((n) => collectRefs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else collectRefs(v, out);
    }
  }
  return out;
}

// id → {id, file, schema, entries: Map(facet key → Set(def names)), name: file's base name}
const facetSchemas = new Map();
const coreAliases = new Set();
for (const file of facetFiles) {
  const schema = readJson(file);
  if (typeof schema.$id !== 'string') die(`${file} has no $id`);
  if (facetSchemas.has(schema.$id)) die(`${file}: $id ${schema.$id} also in ${facetSchemas.get(schema.$id).file}`);
  // Facet schemas $ref the core schema by its versioned $id
  // (https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetFacet). A facet that
  // refers to another core version (e.g. .../1-0-5/OpenLineage.json) would leave that ref
  // unresolvable, so the core schema is registered a second time under that id (a copy with $id
  // changed; `definitions` aliased to `$defs` for refs in the pre-2020 "#/definitions/X" form).
  // In the fixtures checked in with this script every facet file, core and registry alike,
  // refers to 2-0-2, the core's own $id, so no alias is made; the code is here for fixtures
  // updated from a newer OpenLineage release.
  for (const ref of collectRefs(schema, [])) {
    const base = ref.split('#')[0];
    if (!base || base === CORE_ID || coreAliases.has(base) || !/\/OpenLineage\.json$/.test(base)) continue;
    const copy = structuredClone(core);
    copy.$id = base;
    copy.definitions = structuredClone(core.$defs);
    try {
      ajv.addSchema(copy);
    } catch (e) {
      die(`core alias ${base} (for ${file}): ${e.message}`);
    }
    coreAliases.add(base);
    console.error(`note: ${path.basename(file)} refers to core schema ${base}; registered OpenLineage.json (${CORE_ID}) under that id too`);
  }
  try {
    ajv.addSchema(schema);
  } catch (e) {
    die(`${file}: ${e.message}`);
  }
  facetSchemas.set(schema.$id, { id: schema.$id, file, schema, name: path.basename(new URL(schema.$id).pathname) });
}

// Local definitions a schema node leads to through $ref/anyOf/oneOf (e.g. the "lineage" key of
// LineageFacet.json is an anyOf of LineageDatasetFacet and LineageJobFacet; BaseSubsetDatasetFacet
// is a oneOf of the input and output subset facets).
function localDefsOf(schema, node, seen = new Set()) {
  if (!node || typeof node !== 'object') return seen;
  if (typeof node.$ref === 'string' && node.$ref.startsWith('#/$defs/')) {
    const name = node.$ref.slice('#/$defs/'.length);
    if (!seen.has(name)) {
      seen.add(name);
      localDefsOf(schema, schema.$defs?.[name], seen);
    }
  }
  for (const k of ['anyOf', 'oneOf']) if (Array.isArray(node[k])) node[k].forEach((n) => localDefsOf(schema, n, seen));
  return seen;
}

// The core facet kinds (RunFacet, JobFacet, DatasetFacet, InputDatasetFacet, OutputDatasetFacet)
// a definition builds on: its allOf's $ref to the core schema, or those of the definitions its
// oneOf/anyOf lead to.
function kindsOf(schema, name, seen = new Set()) {
  const kinds = new Set();
  if (seen.has(name)) return kinds;
  seen.add(name);
  const def = schema.$defs?.[name];
  if (!def) return kinds;
  for (const part of def.allOf ?? []) {
    const ref = part?.$ref;
    if (typeof ref !== 'string') continue;
    const [base, frag] = ref.split('#');
    if ((base === CORE_ID || coreAliases.has(base)) && frag) kinds.add(frag.split('/').pop());
  }
  for (const k of ['anyOf', 'oneOf']) {
    for (const n of def[k] ?? []) {
      if (typeof n?.$ref === 'string' && n.$ref.startsWith('#/$defs/')) {
        for (const kind of kindsOf(schema, n.$ref.slice('#/$defs/'.length), seen)) kinds.add(kind);
      }
    }
  }
  return kinds;
}

for (const info of facetSchemas.values()) {
  info.entries = new Map();
  for (const [key, node] of Object.entries(info.schema.properties ?? {})) info.entries.set(key, localDefsOf(info.schema, node));
}

const validators = new Map();
function validatorFor(url) {
  if (!validators.has(url)) {
    try {
      validators.set(url, ajv.compile({ $ref: url }));
    } catch (e) {
      die(`cannot compile ${url}: ${e.message}`);
    }
  }
  return validators.get(url);
}
const validateRunEvent = validatorFor(RUN_EVENT_URL);
// Compile every facet definition up front, so a broken fixture fails the run (exit 2) rather
// than only when an event happens to use it.
for (const info of facetSchemas.values()) {
  for (const defs of info.entries.values()) for (const def of defs) validatorFor(`${info.id}#/$defs/${def}`);
}

// ---- reporting

function pointerGet(data, pointer) {
  let node = data;
  for (const part of pointer.split('/').slice(1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

function shown(value) {
  const s = JSON.stringify(value);
  if (s === undefined) return String(value);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

// ajv's errors as "<instancePath> <message>" lines, with the offending value or the parameter
// that explains the message. anyOf/oneOf/allOf summary errors ("must match a schema in anyOf")
// are dropped when a more specific error at or below the same path says what is wrong (also
// when that error is one `skip` leaves out, because another check reports it in its own words).
function ajvLines(errors, data, skip = () => false) {
  const out = [];
  for (const e of errors ?? []) {
    if (skip(e)) continue;
    if (['anyOf', 'oneOf', 'allOf'].includes(e.keyword) &&
        errors.some((o) => o !== e && !['anyOf', 'oneOf', 'allOf'].includes(o.keyword) &&
                           (o.instancePath === e.instancePath || o.instancePath.startsWith(`${e.instancePath}/`)))) {
      continue;
    }
    let msg = `${e.instancePath || '(root)'} ${e.message}`;
    if (e.keyword === 'enum') msg += ` (${e.params.allowedValues.map(shown).join(', ')})`;
    if (e.keyword === 'const') msg += ` ${shown(e.params.allowedValue)}`;
    if (e.keyword === 'additionalProperties') msg += ` '${e.params.additionalProperty}'`;
    if (['type', 'format', 'enum', 'const', 'pattern', 'minimum', 'maximum'].includes(e.keyword)) {
      msg += `, got ${shown(pointerGet(data, e.instancePath))}`;
    }
    out.push(msg);
  }
  return out;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// ---- the checks

function checkFacet(problem, where, kind, key, facet) {
  const label = `${where}.${key}`;
  if (!isObject(facet)) {
    problem(label, `facet must be an object, got ${shown(facet)}`);
    return;
  }
  const custom = args.allowCustom.has(key);
  if (!('_producer' in facet)) problem(label, 'missing _producer');
  if (!('_schemaURL' in facet)) {
    problem(label, 'missing _schemaURL');
    return;
  }
  const url = facet._schemaURL;
  if (typeof url !== 'string') {
    problem(label, `/_schemaURL must be a string, got ${shown(url)}`);
    return;
  }
  const hash = url.indexOf('#');
  const base = hash < 0 ? url : url.slice(0, hash);
  const frag = hash < 0 ? '' : url.slice(hash + 1);
  const info = facetSchemas.get(base);
  if (!info) {
    if (custom) return;  // an allow-listed custom facet: only the core BaseFacet checks apply
    let hint = '';
    try {
      const name = path.basename(new URL(base).pathname);
      const same = [...facetSchemas.values()].filter((i) => i.name === name).map((i) => i.id);
      if (same.length) hint = ` (the fixtures have ${same.join(', ')})`;
    } catch {
      // not a URL: no hint
    }
    problem(label, `unknown facet schema ${JSON.stringify(url)}${hint}`);
    return;
  }
  const forKey = info.entries.get(key);
  const m = /^\/\$defs\/([^/]+)$/.exec(frag);
  if (!m) {
    const defs = [...(forKey ?? [...info.entries.values()][0] ?? [])];
    const suggestion = defs.length ? ` (e.g. ${info.id}#/$defs/${defs[0]})` : '';
    problem(label, `/_schemaURL ${JSON.stringify(url)} must name the facet definition as ${info.id}#/$defs/<Name>${suggestion}`);
    return;
  }
  const def = m[1];
  if (!info.schema.$defs?.[def]) {
    problem(label, `/_schemaURL ${JSON.stringify(url)}: ${info.id} has no definition ${def}`);
    return;
  }
  const keysForDef = [...info.entries].filter(([, defs]) => defs.has(def)).map(([k]) => k);
  if (keysForDef.length === 0) {
    problem(label, `/_schemaURL ${JSON.stringify(url)}: ${def} is not a facet definition of ${info.id}`);
    return;
  }
  const kinds = kindsOf(info.schema, def);
  if (!kinds.has(kind)) {
    const what = [...kinds].join('/') || 'facet of no core kind';
    problem(label, `${def} is ${/^[AEIOU]/.test(what) ? 'an' : 'a'} ${what}, which does not belong here (${where} holds ${kind}s)`);
  }
  if (!custom && !keysForDef.includes(key)) {
    problem(label, `facet key "${key}" does not match ${def}: its schema names it ${keysForDef.map((k) => `"${k}"`).join(' or ')}`);
  }
  if (facet._deleted === true) return;
  const validate = validatorFor(`${info.id}#/$defs/${def}`);
  // (a missing _producer/_schemaURL is reported once, above)
  if (!validate(facet)) {
    for (const line of ajvLines(validate.errors, facet, (e) => isBaseFieldMissing(e, ''))) problem(label, line);
  }
}

// A `required` error for a facet's _producer or _schemaURL at `at` (checkFacet reports those
// itself, once, naming the facet).
function isBaseFieldMissing(e, at) {
  return e.keyword === 'required' && ['_producer', '_schemaURL'].includes(e.params.missingProperty) &&
         (typeof at === 'string' ? e.instancePath === at : at.test(e.instancePath));
}
const FACET_PATH = /^\/(?:run\/facets|job\/facets|(?:inputs|outputs)\/\d+\/(?:facets|inputFacets|outputFacets))\/[^/]+$/;

function checkEvent(event, problem) {
  // Errors about run.runId are left to the explicit check below, which says the same once.
  if (!validateRunEvent(event)) {
    const skip = (e) => isBaseFieldMissing(e, FACET_PATH) || e.instancePath === '/run/runId' ||
                        (e.instancePath === '/run' && e.keyword === 'required' && e.params.missingProperty === 'runId');
    for (const line of ajvLines(validateRunEvent.errors, event, skip)) problem('core', line);
  }
  if (!isObject(event)) return;
  if (!('eventType' in event)) problem('core', "(root) must have required property 'eventType' (skade always sends it)");
  if (typeof event.schemaURL === 'string' && event.schemaURL !== RUN_EVENT_URL) {
    problem('core', `/schemaURL must be ${shown(RUN_EVENT_URL)} (the schema this validator checks against), got ${shown(event.schemaURL)}`);
  }
  if (isObject(event.run)) {
    if (!('runId' in event.run)) problem('core', "/run must have required property 'runId'");
    else if (typeof event.run.runId !== 'string' || !UUID.test(event.run.runId)) {
      problem('core', `/run/runId must be a UUID (8-4-4-4-12 hex digits), got ${shown(event.run.runId)}`);
    }
  }

  const containers = [];
  containers.push(['run.facets', 'RunFacet', event.run?.facets]);
  containers.push(['job.facets', 'JobFacet', event.job?.facets]);
  for (const [side, extra, extraKind] of [['inputs', 'inputFacets', 'InputDatasetFacet'], ['outputs', 'outputFacets', 'OutputDatasetFacet']]) {
    if (!Array.isArray(event[side])) continue;
    event[side].forEach((ds, i) => {
      if (!isObject(ds)) return;
      containers.push([`${side}[${i}].facets`, 'DatasetFacet', ds.facets]);
      containers.push([`${side}[${i}].${extra}`, extraKind, ds[extra]]);
    });
  }
  for (const [where, kind, facets] of containers) {
    if (!isObject(facets)) continue;  // absent, or not an object (the core check reports that)
    for (const [key, facet] of Object.entries(facets)) checkFacet(problem, where, kind, key, facet);
  }
}

// ---- the events

let text;
try {
  text = fs.readFileSync(args.events, 'utf8');
} catch (e) {
  die(`cannot read ${args.events}: ${e.message}`);
}
if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
const events = [];
text.split('\n').forEach((raw, i) => {
  const line = raw.replace(/\r$/, '');
  if (line.trim() === '') return;
  try {
    events.push({ line: i + 1, event: JSON.parse(line) });
  } catch (e) {
    die(`${args.events}: line ${i + 1} is not JSON: ${e.message}`);
  }
});

let problems = 0;
let badEvents = 0;
for (const { line, event } of events) {
  const seen = new Set();
  const problem = (where, msg) => {
    const out = `event ${line}: ${where}: ${msg}`;
    if (seen.has(out)) return;
    seen.add(out);
    console.error(out);
  };
  checkEvent(event, problem);
  problems += seen.size;
  if (seen.size) ++badEvents;
}
if (events.length < args.minEvents) {
  console.error(`${args.events}: ${events.length} events, expected at least ${args.minEvents}`);
  ++problems;
}
if (problems) {
  console.log(`FAIL: ${badEvents} of ${events.length} events invalid, ${problems} problems`);
  process.exit(1);
}
console.log(`ok ${events.length} events`);
