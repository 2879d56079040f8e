// A table's page: schema (nested, identifier fields, history), partition specs, sort orders,
// snapshots as a timeline, branches and tags, properties, data and delete files (paged by the
// server from the snapshot's manifests, /console/v1/files), and the metadata JSON. The metadata comes
// without its history (/console/v1/table); the snapshots come a page at a time
// (/console/v1/snapshots) into a virtualised timeline, and the files into virtualised tables, so
// that a table of 100,000 snapshots or files draws what is in view.
import { getJson, Ident, identText, tablePath, toJson } from './api';
import { Child, append, clear, el, errorBox, fmtBytes, fmtInt, fmtTime, section, table } from './dom';
import { lineageHref } from './lineage';
import { liveHref } from './live';
import { PagedRows, tableSpacer, TokenRows, VirtualList } from './virtual';

export async function renderTable(main: HTMLElement, parts: string[], signal: AbortSignal): Promise<void> {
  const ident: Ident = { namespace: parts.slice(0, -1), name: parts[parts.length - 1] };
  const path = await tablePath(ident.namespace, ident.name);
  const q = new URLSearchParams({ table: identText(ident) });
  const loaded = await getJson(`/console/v1/table?${q}`, { signal });
  const m = loaded.metadata ?? {};
  const snaps = new PagedRows<any>(
    SNAPSHOT_PAGE,
    async (offset, limit) => {
      const page: any = await getJson(`/console/v1/snapshots?${q}&offset=${offset}&limit=${limit}`, { signal });
      return { rows: page.snapshots ?? [], total: page.total ?? 0 };
    },
    () => timeline?.redraw(),
    () => {},
  );
  await snaps.start();
  const title = el('h1', { id: 'table-title' }, el('span', { class: 'muted' }, ident.namespace.join('.') + '.'), ident.name);
  const live = el(
    'p',
    { class: 'links' },
    el('a', { href: liveHref(ident), id: 'live-link' }, 'Live rows: this table read again on every commit ›'),
    el('a', { href: lineageHref(ident), id: 'lineage-link' }, 'Lineage: where its rows came from and went ›'),
  );
  const current = (m.snapshots ?? []).find((s: any) => s['snapshot-id'] === m['current-snapshot-id']);
  const summary = current?.summary ?? {};
  const facts = el(
    'dl',
    { class: 'facts' },
    el('dt', {}, 'rows'),
    el('dd', {}, fmtInt(summary['total-records'] ?? 0)),
    el('dt', {}, 'bytes'),
    el('dd', {}, fmtBytes(summary['total-files-size'] ?? 0)),
    el('dt', {}, 'format version'),
    el('dd', {}, String(m['format-version'] ?? '–')),
    el('dt', {}, 'uuid'),
    el('dd', {}, String(m['table-uuid'] ?? '–')),
    el('dt', {}, 'location'),
    el('dd', {}, String(m.location ?? '–')),
    el('dt', {}, 'metadata file'),
    el('dd', {}, String(loaded['metadata-location'] ?? '–')),
  );
  const files = section('Files', el('p', { class: 'muted' }, 'Reading the manifests…'));
  const preview = previewSection(ident, m, snaps, signal);
  const history = snapshotsSection(m, snaps, preview.at);
  const timeline = history.list;
  main.append(
    title,
    live,
    facts,
    schemaSection(m),
    specsSection(m),
    history.card,
    refsSection(m),
    propertiesSection(m),
    files,
    preview.card,
    metadataSection(path, signal),
  );
  await fillFiles(files, ident, m, signal);
}

const PAGE = 50;
const SNAPSHOT_PAGE = 500;
const ROW_HEIGHT = 28;

// The full metadata JSON (the REST catalog's loadTable, history included), read when opened.
function metadataSection(path: string, signal: AbortSignal): HTMLElement {
  const pre = el('pre', { class: 'json', id: 'metadata-json' }, 'Loading…');
  const details = el('details', {}, el('summary', {}, 'show'), pre);
  let asked = false;
  details.addEventListener('toggle', async () => {
    if (!details.open || asked) return;
    asked = true;
    try {
      pre.textContent = toJson((await getJson(path, { signal })).metadata, 2);
    } catch (e) {
      asked = false;
      pre.textContent = `cannot load the metadata: ${e instanceof Error ? e.message : e}`;
    }
  });
  return section('Metadata JSON', details);
}

// A page of rows at a chosen snapshot (GET /console/v1/preview), with the previous and next pages.
// The snapshots offered are the current one and the history a page (SNAPSHOT_PAGE) at a time,
// newest first: the first page at once, each older one on asking (/console/v1/snapshots); `at`
// shows any other (a snapshot chosen in the timeline).
function previewSection(ident: Ident, m: any, history: PagedRows<any>, signal: AbortSignal): { card: HTMLElement; at: (s: any) => void } {
  const snaps: any[] = [];
  for (let i = 0; i < Math.min(history.total, SNAPSHOT_PAGE); i++) snaps.push(history.get(i));
  const current = (m.snapshots ?? []).find((s: any) => s['snapshot-id'] === m['current-snapshot-id']);
  if (current && !snaps.some((s) => s['snapshot-id'] === current['snapshot-id'])) snaps.unshift(current);
  const choose = el('select', { id: 'preview-snapshot', 'aria-label': 'snapshot' });
  const optionOf = (s: any) => el('option', { value: String(s['snapshot-id']) }, `${String(s['snapshot-id'])} · ${s.summary?.operation ?? ''} · ${fmtTime(s['timestamp-ms'])}`);
  for (const s of snaps) {
    const option = optionOf(s);
    if (s['snapshot-id'] === m['current-snapshot-id']) option.selected = true;
    choose.append(option);
  }
  // Older snapshots, a page of the history at a time.
  let offered = Math.min(history.total, SNAPSHOT_PAGE);
  const older = el('button', { type: 'button', id: 'preview-older' }, 'older snapshots ›');
  const offeredText = el('span', { class: 'muted', id: 'preview-offered' });
  const showOffered = () => {
    offeredText.textContent = `${fmtInt(offered)} of ${fmtInt(history.total)} snapshots offered`;
    older.disabled = offered >= history.total;
  };
  showOffered();
  older.addEventListener('click', async () => {
    older.disabled = true;
    try {
      const q = new URLSearchParams({ table: identText(ident), offset: String(offered), limit: String(SNAPSHOT_PAGE) });
      const page: any = await getJson(`/console/v1/snapshots?${q}`, { signal });
      const have = new Set(Array.from(choose.options).map((o) => o.value));
      for (const s of page.snapshots ?? []) if (!have.has(String(s['snapshot-id']))) choose.append(optionOf(s));
      offered = Math.min(page.total ?? history.total, offered + (page.snapshots ?? []).length);
      if (!(page.snapshots ?? []).length) offered = history.total;
    } catch (e) {
      if (signal.aborted) return;
      offeredText.textContent = `cannot list older snapshots: ${e instanceof Error ? e.message : e}`;
      older.disabled = false;
      return;
    }
    showOffered();
  });
  const prev = el('button', { type: 'button', id: 'preview-prev' }, '‹ previous');
  const next = el('button', { type: 'button', id: 'preview-next' }, 'next ›');
  const where = el('span', { class: 'muted', id: 'preview-where' });
  const grid = el('div', { id: 'preview' });
  let offset = 0;
  const show = async () => {
    prev.disabled = next.disabled = true;
    grid.dataset.loading = 'true';
    const q = new URLSearchParams({ table: [...ident.namespace, ident.name].join('.'), offset: String(offset), limit: String(PAGE) });
    if (choose.value) q.set('snapshot-id', choose.value);
    try {
      const page: any = await getJson(`/console/v1/preview?${q}`, { signal });
      clear(grid);
      const columns: any[] = page.columns ?? [];
      const rows: Child[][] = (page.rows ?? []).map((r: any[]) => r.map((v) => (v === null ? el('span', { class: 'null' }, 'NULL') : v)));
      grid.append(table(columns.map((c) => `${c.name} ${c.type}`), rows, { id: 'preview-rows', class: 'rows' }));
      where.textContent = rows.length ? `rows ${fmtInt(offset + 1)}–${fmtInt(offset + rows.length)}` : 'no rows';
      prev.disabled = offset === 0;
      next.disabled = !page.more;
    } catch (e) {
      if (signal.aborted) return;
      clear(grid);
      grid.append(errorBox(`cannot preview: ${e instanceof Error ? e.message : e}`));
    }
    grid.dataset.loading = 'false';
  };
  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE);
    show();
  });
  next.addEventListener('click', () => {
    offset += PAGE;
    show();
  });
  choose.addEventListener('change', () => {
    offset = 0;
    show();
  });
  if (snaps.length) show();
  else grid.append(el('p', { class: 'muted' }, 'no snapshot: no rows'));
  const card = section('Data preview', el('div', { class: 'toolbar' }, choose, older, offeredText, prev, next, where), grid);
  const at = (s: any) => {
    const id = String(s['snapshot-id']);
    if (!Array.from(choose.options).some((o) => o.value === id)) choose.append(optionOf(s));
    choose.value = id;
    offset = 0;
    show();
    card.scrollIntoView();
  };
  return { card, at };
}

function typeText(t: any): string {
  if (typeof t === 'string') return t;
  if (!t || typeof t !== 'object') return String(t);
  if (t.type === 'struct') return 'struct';
  if (t.type === 'list') return `list<${typeText(t.element)}>`;
  if (t.type === 'map') return `map<${typeText(t.key)}, ${typeText(t.value)}>`;
  return String(t.type);
}

// The fields of a schema as rows, nested fields indented under their parent.
function fieldRows(fields: any[], ids: Set<number>, depth: number, out: Child[][]): void {
  for (const f of fields ?? []) {
    const name = el('span', { class: 'field', 'data-depth': String(depth) }, f.name);
    out.push([
      String(f.id),
      el('span', { class: `indent d${Math.min(depth, 6)}` }, name),
      typeText(f.type),
      f.required ? 'required' : 'optional',
      ids.has(f.id) ? 'identifier' : '',
      f.doc ?? '',
    ]);
    const t = f.type;
    if (t && typeof t === 'object') {
      if (t.type === 'struct') fieldRows(t.fields, ids, depth + 1, out);
      if (t.type === 'list') fieldRows([{ id: t['element-id'], name: 'element', type: t.element, required: t['element-required'] }], ids, depth + 1, out);
      if (t.type === 'map') {
        fieldRows(
          [
            { id: t['key-id'], name: 'key', type: t.key, required: true },
            { id: t['value-id'], name: 'value', type: t.value, required: t['value-required'] },
          ],
          ids,
          depth + 1,
          out,
        );
      }
    }
  }
}

function flatNames(fields: any[], prefix = ''): Map<number, string> {
  const out = new Map<number, string>();
  for (const f of fields ?? []) {
    out.set(f.id, prefix + f.name);
    if (f.type?.type === 'struct') for (const [k, v] of flatNames(f.type.fields, `${prefix}${f.name}.`)) out.set(k, v);
  }
  return out;
}

// What a field is, apart from its name: its type, whether required, its doc.
function flatShapes(fields: any[], out = new Map<number, string>()): Map<number, string> {
  for (const f of fields ?? []) {
    out.set(f.id, `${typeText(f.type)}|${f.required ? 1 : 0}|${f.doc ?? ''}`);
    if (f.type?.type === 'struct') flatShapes(f.type.fields, out);
  }
  return out;
}

function schemaSection(m: any): HTMLElement {
  const schemas: any[] = m.schemas ?? [];
  const cur = schemas.find((s) => s['schema-id'] === m['current-schema-id']) ?? schemas[schemas.length - 1];
  const rows: Child[][] = [];
  if (cur) fieldRows(cur.fields, new Set(cur['identifier-field-ids'] ?? []), 0, rows);
  const history: Child[][] = [];
  let prev = new Map<number, string>();
  let prevShapes = new Map<number, string>();
  let prevIds = '';
  for (const s of schemas) {
    const names = flatNames(s.fields);
    const shapes = flatShapes(s.fields);
    const ids = [...(s['identifier-field-ids'] ?? [])].map((id: number) => names.get(id) ?? String(id)).join(', ');
    const added = [...names].filter(([id]) => !prev.has(id)).map(([, n]) => n);
    const dropped = [...prev].filter(([id]) => !names.has(id)).map(([, n]) => n);
    const renamed = [...names].filter(([id, n]) => prev.has(id) && prev.get(id) !== n).map(([id, n]) => `${prev.get(id)} → ${n}`);
    const changed = [...shapes].filter(([id, v]) => prevShapes.has(id) && prevShapes.get(id) !== v).map(([id]) => names.get(id) ?? String(id));
    if (history.length && ids !== prevIds) changed.push(`identifier fields: ${ids || 'none'}`);
    history.push([
      String(s['schema-id']) + (s === cur ? ' (current)' : ''),
      String(names.size),
      added.join(', '),
      dropped.join(', '),
      renamed.join(', '),
      changed.join(', '),
    ]);
    prev = names;
    prevShapes = shapes;
    prevIds = ids;
  }
  return section(
    'Schema',
    table(['id', 'name', 'type', '', 'identifier', 'doc'], rows, { id: 'schema' }),
    el('h3', {}, 'Schema history'),
    table(['schema', 'fields', 'added', 'dropped', 'renamed', 'changed (type, required, doc)'], history, { id: 'schema-history' }),
  );
}

function specsSection(m: any): HTMLElement {
  const schemas: any[] = m.schemas ?? [];
  const names = new Map<number, string>();
  for (const s of schemas) for (const [k, v] of flatNames(s.fields)) names.set(k, v);
  const specs: Child[][] = (m['partition-specs'] ?? []).map((s: any) => [
    String(s['spec-id']) + (s['spec-id'] === m['default-spec-id'] ? ' (default)' : ''),
    (s.fields ?? []).length
      ? (s.fields ?? []).map((f: any) => `${f.name} = ${f.transform}(${names.get(f['source-id']) ?? f['source-id']})`).join(', ')
      : 'unpartitioned',
  ]);
  const orders: Child[][] = (m['sort-orders'] ?? []).map((o: any) => [
    String(o['order-id']) + (o['order-id'] === m['default-sort-order-id'] ? ' (default)' : ''),
    (o.fields ?? []).length
      ? (o.fields ?? [])
          .map((f: any) => `${f.transform}(${names.get(f['source-id']) ?? f['source-id']}) ${f.direction} ${f['null-order']}`)
          .join(', ')
      : 'unsorted',
  ]);
  return section(
    'Partitioning and sort orders',
    table(['partition spec', 'fields'], specs, { id: 'specs' }),
    table(['sort order', 'fields'], orders, { id: 'sort-orders' }),
  );
}

function snapshotRow(s: any, m: any, refsBySnap: Map<unknown, string[]>, preview: (s: any) => void): HTMLElement {
  const sum = s.summary ?? {};
  const delta = (added: string, removed: string, unit: string) => {
    const a = Number(sum[added] ?? 0);
    const r = Number(sum[removed] ?? 0);
    return a || r ? `+${fmtInt(a)} / −${fmtInt(r)} ${unit}` : '';
  };
  const writer = ['engine-name', 'engine-version', 'app-id', 'skade.writer', 'spark.app.id']
    .filter((k) => sum[k])
    .map((k) => `${k}=${sum[k]}`)
    .join(' ');
  // The id previews the rows at this snapshot.
  const sid = el('button', { type: 'button', class: 'sid', title: 'preview the rows at this snapshot' }, String(s['snapshot-id']));
  sid.addEventListener('click', () => preview(s));
  return el(
    'li',
    { class: s['snapshot-id'] === m['current-snapshot-id'] ? 'vrow current' : 'vrow', 'data-snapshot': String(s['snapshot-id']) },
    el('span', { class: `op op-${String(sum.operation ?? 'unknown').replace(/[^a-z]/g, '')}` }, sum.operation ?? '?'),
    el('span', { class: 'when' }, fmtTime(s['timestamp-ms'])),
    sid,
    el('span', {}, delta('added-records', 'deleted-records', 'rows')),
    el('span', {}, delta('added-data-files', 'deleted-data-files', 'data files')),
    el('span', {}, delta('added-delete-files', 'removed-delete-files', 'delete files')),
    el('span', { class: 'muted' }, `total ${fmtInt(sum['total-records'])} rows`),
    ...(refsBySnap.get(s['snapshot-id']) ?? []).map((r) => el('span', { class: 'ref' }, r)),
    writer ? el('span', { class: 'muted' }, writer) : null,
  );
}

// The snapshots, newest first, as a virtualised timeline paged from the server; a snapshot's id
// shows its rows in the preview.
function snapshotsSection(m: any, snaps: PagedRows<any>, preview: (s: any) => void): { card: HTMLElement; list: VirtualList | null } {
  if (!snaps.total) return { card: section('Snapshots (0)', el('p', { class: 'muted' }, 'no snapshots')), list: null };
  const refsBySnap = new Map<unknown, string[]>();
  for (const [name, r] of Object.entries<any>(m.refs ?? {})) {
    refsBySnap.set(r['snapshot-id'], [...(refsBySnap.get(r['snapshot-id']) ?? []), name]);
  }
  const items = el('ol', { class: 'timeline vrows', id: 'snapshots' });
  const viewport = el('div', { class: 'vlist', id: 'snapshots-view' }, items);
  const list = new VirtualList({
    rowHeight: ROW_HEIGHT,
    items,
    viewport,
    spacer: () => el('li', { 'aria-hidden': 'true' }),
    render: (i) => {
      const s = snaps.get(i);
      return s ? snapshotRow(s, m, refsBySnap, preview) : el('li', { class: 'vrow muted' }, '…');
    },
  });
  list.setCount(snaps.total);
  return { card: section(`Snapshots (${fmtInt(snaps.total)})`, viewport), list };
}

function refsSection(m: any): HTMLElement {
  const rows: Child[][] = Object.entries<any>(m.refs ?? {}).map(([name, r]) => [
    name,
    r.type,
    String(r['snapshot-id']),
    r['max-ref-age-ms'] != null ? `${r['max-ref-age-ms']} ms` : '',
    r['max-snapshot-age-ms'] != null ? `${r['max-snapshot-age-ms']} ms` : '',
    r['min-snapshots-to-keep'] != null ? String(r['min-snapshots-to-keep']) : '',
  ]);
  return section('Branches and tags', table(['name', 'type', 'snapshot', 'max ref age', 'max snapshot age', 'min snapshots'], rows, { id: 'refs' }));
}

function propertiesSection(m: any): HTMLElement {
  const rows: Child[][] = Object.entries<any>(m.properties ?? {})
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => [k, String(v)]);
  return section('Properties', table(['key', 'value'], rows, { id: 'properties' }));
}

// A partition tuple as the file list's route gives it ({field: value as text or null}).
function partitionText(p: any): string {
  if (!p || typeof p !== 'object') return p == null ? '' : String(p);
  return Object.entries<any>(p)
    .map(([k, v]) => `${k}=${v === null ? 'null' : String(v)}`)
    .join(', ');
}

function fileName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

const FILE_PAGE = 200;

// One content's files (data or deletes) at a snapshot as a virtualised table, paged by the server
// (/console/v1/files, a page token each) as it scrolls: the file name (its full path as the row's
// data-path, for tests and tooltips) and `cells`. Resolves once the first page is drawn.
async function fileList(
  ident: Ident,
  snapshot: string,
  content: 'data' | 'deletes',
  id: string,
  headers: string[],
  cells: (f: any) => Child[],
  signal: AbortSignal,
): Promise<{ view: HTMLElement; rows: TokenRows<any> }> {
  const body = el('tbody');
  const viewport = el('div', { class: 'vlist', id: `${id}-view` }, table(headers, [], { id }));
  viewport.querySelector('table')!.replaceChild(body, viewport.querySelector('tbody')!);
  const problem = el('p', { class: 'error', role: 'alert', hidden: 'true' });
  let list: VirtualList | null = null;
  const rows = new TokenRows<any>(
    async (token) => {
      const q = new URLSearchParams({ table: identText(ident), 'snapshot-id': snapshot, content, 'page-size': String(FILE_PAGE) });
      if (token) q.set('page-token', token);
      const page: any = await getJson(`/console/v1/files?${q}`, { signal });
      const total = page.total == null ? null : Number(page.total);
      return { rows: page.files ?? [], next: page['next-page-token'] ?? null, total };
    },
    () => list?.setCount(rows.count()),
    (e) => {
      if (signal.aborted) return;
      problem.textContent = `cannot list more files: ${e instanceof Error ? e.message : e}`;
      problem.hidden = false;
    },
  );
  await rows.start();
  list = new VirtualList({
    rowHeight: ROW_HEIGHT,
    items: body,
    viewport,
    spacer: tableSpacer(headers.length),
    render: (i) => {
      const f = rows.get(i);
      if (!f) return el('tr', { class: 'vrow muted' }, el('td', { colspan: String(headers.length) }, '…'));
      return el('tr', { class: 'vrow', 'data-path': f['file-path'] },
        el('td', { title: f['file-path'] }, fileName(f['file-path'])), ...cells(f).map((c) => el('td', {}, c)));
    },
  });
  list.setCount(rows.count());
  return { view: el('div', {}, viewport, problem), rows };
}

async function fillFiles(card: HTMLElement, ident: Ident, m: any, signal: AbortSignal): Promise<void> {
  if (m['current-snapshot-id'] == null || m['current-snapshot-id'] === -1) {
    clear(card);
    append(card, el('h2', {}, 'Files'), el('p', { class: 'muted', id: 'files-empty' }, 'no snapshot: no files'));
    return;
  }
  const snapshot = String(m['current-snapshot-id']);
  let data;
  let deletes;
  try {
    data = await fileList(ident, snapshot, 'data', 'data-files', ['file', 'format', 'partition', 'rows', 'size'], (f) => [
      f['file-format'],
      partitionText(f.partition),
      fmtInt(f['record-count']),
      fmtBytes(f['file-size-in-bytes']),
    ], signal);
    deletes = await fileList(ident, snapshot, 'deletes', 'delete-files', ['file', 'content', 'partition', 'rows', 'size'], (d) => [
      d.content,
      partitionText(d.partition),
      fmtInt(d['record-count']),
      fmtBytes(d['file-size-in-bytes']),
    ], signal);
  } catch (e) {
    if (signal.aborted) return;
    clear(card);
    append(card, el('h2', {}, 'Files'), errorBox(`cannot list the files: ${e instanceof Error ? e.message : e}`));
    return;
  }
  const count = (r: TokenRows<any>) => (r.total === null ? `${fmtInt(r.loaded())}+` : fmtInt(r.total));
  clear(card);
  append(
    card,
    el('h2', {}, 'Files'),
    el('p', { class: 'muted', id: 'files-summary' }, `${count(data.rows)} data files, ${count(deletes.rows)} delete files, at snapshot ${snapshot}`),
    el('h3', {}, 'Data files'),
    data.view,
    el('h3', {}, 'Delete files'),
    deletes.rows.count() ? deletes.view : el('p', { class: 'muted' }, 'none'),
  );
}
