// Lineage: a graph of where a table's rows came from and where they went, drawn as SVG with DOM
// calls (every name a text node). What skade records per commit is read from the tables' metadata
// (each snapshot's summary "skade.lineage": the input tables at the snapshots read, files read,
// and per output column the input columns it derives from): the table, the commits that wrote it
// with lineage, their inputs, and so on upstream; and downstream the commits whose inputs include
// it, the tables they wrote, and so on. Selecting a commit or an edge shows its column lineage. A
// table's commits with lineage come from the server as its newest MAX_COMMITS snapshots with that
// summary key (/console/v1/snapshots), not with its whole history; the commits that read a table
// as its newest MAX_COMMITS of them (/console/v1/downstream), the rest counted as "N more". Every
// table is visited once each way, so a cycle ends.
import { Ident, getJson, identText, parseJson } from './api';
import { Child, clear, el, fmtTime, section, table } from './dom';
import { tableHref } from './overview';

const MAX_TABLES = 40;  // tables loaded, the focus included
const MAX_DEPTH = 4;    // tables upstream (and downstream) of the focus
const MAX_COMMITS = 12; // commits with lineage shown per table, newest first

interface LineageInput {
  table?: string;
  location?: string;
  'snapshot-id'?: unknown;
}

interface Commit {
  key: string;
  table: string;  // the table written
  snapshot: string;
  operation: string;
  at: number;
  inputs: LineageInput[];
  columns: Record<string, any[]>;
  dataset: any[];
}

interface GraphNode {
  key: string;
  kind: 'table' | 'commit' | 'file';
  label: string;
  title: string;
  depth: number;
  ident?: Ident;
  commit?: Commit;
}

interface Edge {
  from: string;
  to: string;
  commit: Commit;
  input: number;  // index into commit.inputs; -1 for the commit → table edge
}

export function lineageHref(i: Ident): string {
  return `#/lineage/${encodeURIComponent(JSON.stringify([...i.namespace, i.name]))}`;
}

// "a.b.t" from a lineage record names namespace [a, b] and table t: the last dot splits (a
// namespace level holding '.' cannot be a SQL schema; skade refuses to create one).
function identOf(name: string): Ident {
  const i = name.lastIndexOf('.');
  return { namespace: name.slice(0, i).split('.'), name: name.slice(i + 1) };
}

function short(text: string, n = 30): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// The commits of a table that recorded lineage, newest first, from its snapshots (newest first).
function commitsOf(table: string, snaps: any[]): Commit[] {
  const out: Commit[] = [];
  for (const s of snaps) {
    const raw = s.summary?.['skade.lineage'];
    if (typeof raw !== 'string') continue;
    let doc: any;
    try {
      doc = parseJson(raw);
    } catch {
      continue;
    }
    out.push({
      key: `commit:${table}@${String(s['snapshot-id'])}`,
      table,
      snapshot: String(s['snapshot-id']),
      operation: String(s.summary?.operation ?? ''),
      at: Number(s['timestamp-ms']),
      inputs: Array.isArray(doc.inputs) ? doc.inputs : [],
      columns: doc.columns && typeof doc.columns === 'object' ? doc.columns : {},
      dataset: Array.isArray(doc.dataset) ? doc.dataset : [],
    });
    if (out.length >= MAX_COMMITS) break;
  }
  return out;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, ...children: (Node | string)[]): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

export async function renderLineage(main: HTMLElement, parts: string[], signal: AbortSignal): Promise<void> {
  const focus: Ident = { namespace: parts.slice(0, -1), name: parts[parts.length - 1] };
  const focusName = identText(focus);
  const nodes = new Map<string, GraphNode>();
  const edges: Edge[] = [];
  const notes: string[] = [];
  // Upstream, breadth first: each table's commits with lineage, then their input tables.
  const queue: { ident: Ident; depth: number }[] = [{ ident: focus, depth: 0 }];
  nodes.set(`table:${focusName}`, { key: `table:${focusName}`, kind: 'table', label: short(focusName), title: focusName, depth: 0, ident: focus });
  const edgeKeys = new Set<string>();
  const addEdge = (e: Edge) => {
    const k = `${e.from}\u0000${e.to}`;
    if (edgeKeys.has(k)) return;
    edgeKeys.add(k);
    edges.push(e);
  };
  let loaded = 0;
  while (queue.length) {
    const { ident, depth } = queue.shift() as { ident: Ident; depth: number };
    const name = identText(ident);
    if (++loaded > MAX_TABLES) {
      notes.push(`more than ${MAX_TABLES} tables upstream: the rest are not shown`);
      break;
    }
    let snaps: any[];
    try {
      const q = new URLSearchParams({ table: name, 'summary-key': 'skade.lineage', limit: String(MAX_COMMITS) });
      snaps = (await getJson(`/console/v1/snapshots?${q}`, { signal })).snapshots ?? [];
    } catch (e) {
      if (signal.aborted) throw e;
      notes.push(`${name}: ${e instanceof Error ? e.message : e}`);
      continue;
    }
    for (const c of commitsOf(name, snaps)) {
      nodes.set(c.key, {
        key: c.key,
        kind: 'commit',
        label: `${c.operation} ${fmtTime(c.at)}`,
        title: `${c.operation} of ${name} at snapshot ${c.snapshot}`,
        depth: depth * 2 + 1,
        commit: c,
      });
      addEdge({ from: c.key, to: `table:${name}`, commit: c, input: -1 });
      c.inputs.forEach((input, i) => {
        const inName = input.table ?? input.location ?? '?';
        const key = input.table ? `table:${inName}` : `file:${inName}`;
        if (!nodes.has(key)) {
          const ident = input.table ? identOf(inName) : undefined;
          nodes.set(key, { key, kind: input.table ? 'table' : 'file', label: short(inName), title: inName, depth: depth * 2 + 2, ident });
          if (ident && depth + 1 <= MAX_DEPTH) queue.push({ ident, depth: depth + 1 });
        }
        addEdge({ from: key, to: c.key, commit: c, input: i });
      });
    }
  }
  await downstream(focus, nodes, addEdge, notes, signal);

  const details = el('div', { id: 'lineage-details' }, el('p', { class: 'muted' }, 'Select a commit or an edge to see its column lineage.'));
  const graph = drawGraph(nodes, edges, (commit, input) => showDetails(details, commit, input));
  main.append(
    el('h1', { id: 'table-title' }, el('span', { class: 'muted' }, 'lineage: '), el('a', { href: tableHref(focus) }, focusName)),
    section(
      'Where the rows came from and where they went',
      el('p', { class: 'muted' }, 'Tables (and files) read by the commits that wrote them, as each commit recorded it; newest commits first, upstream to the left, downstream (the commits that read the table and what they wrote) to the right.'),
      edges.length ? graph : el('p', { class: 'muted', id: 'lineage-empty' }, 'No commit recorded lineage into or out of this table (writes from SQL queries over other tables do).'),
      ...notes.map((n) => el('p', { class: 'muted' }, n)),
    ),
    section('Column lineage', details),
  );
}

// Downstream, breadth first: the commits that read each table (newest MAX_COMMITS), the tables
// they wrote, then those tables' readers; depths below zero are drawn right of the focus.
async function downstream(
  focus: Ident,
  nodes: Map<string, GraphNode>,
  addEdge: (e: Edge) => void,
  notes: string[],
  signal: AbortSignal,
): Promise<void> {
  const queue: { ident: Ident; depth: number }[] = [{ ident: focus, depth: 0 }];
  const visited = new Set<string>([identText(focus)]);
  let loaded = 0;
  while (queue.length) {
    const { ident, depth } = queue.shift() as { ident: Ident; depth: number };
    const name = identText(ident);
    if (++loaded > MAX_TABLES) {
      notes.push(`more than ${MAX_TABLES} tables downstream: the rest are not shown`);
      break;
    }
    let page: any;
    try {
      const q = new URLSearchParams({ table: name, limit: String(MAX_COMMITS) });
      page = await getJson(`/console/v1/downstream?${q}`, { signal });
    } catch (e) {
      if (signal.aborted) throw e;
      notes.push(`${name} downstream: ${e instanceof Error ? e.message : e}`);
      continue;
    }
    if (typeof page.note === 'string' && depth === 0) notes.push(page.note);
    const found: any[] = Array.isArray(page.commits) ? page.commits : [];
    const total = Number(page.total ?? found.length);
    if (total > found.length) {
      notes.push(`${name}: ${(total - found.length).toLocaleString('en-US')} more commits read it (the newest ${found.length} are shown)`);
    }
    for (const d of found) {
      const writer = String(d.table ?? '');
      const [c] = commitsOf(writer, [d.snapshot]);
      if (!c || !writer) continue;
      if (!nodes.has(c.key)) {
        nodes.set(c.key, {
          key: c.key,
          kind: 'commit',
          label: `${c.operation} ${fmtTime(c.at)}`,
          title: `${c.operation} of ${writer} at snapshot ${c.snapshot}`,
          depth: -(depth * 2 + 1),
          commit: c,
        });
      }
      const input = c.inputs.findIndex((i) => i.table === name);
      addEdge({ from: `table:${name}`, to: c.key, commit: c, input });
      const key = `table:${writer}`;
      if (!nodes.has(key)) {
        const wrote = identOf(writer);
        nodes.set(key, { key, kind: 'table', label: short(writer), title: writer, depth: -(depth * 2 + 2), ident: wrote });
      }
      addEdge({ from: c.key, to: key, commit: c, input: -1 });
      if (!visited.has(writer) && depth + 1 <= MAX_DEPTH) {
        visited.add(writer);
        queue.push({ ident: identOf(writer), depth: depth + 1 });
      }
    }
  }
}

function drawGraph(nodes: Map<string, GraphNode>, edges: Edge[], select: (c: Commit, input: number) => void): SVGSVGElement {
  const W = 230;
  const H = 34;
  const GAP_X = 80;
  const GAP_Y = 18;
  const maxDepth = Math.max(0, ...[...nodes.values()].map((n) => n.depth));
  const minDepth = Math.min(0, ...[...nodes.values()].map((n) => n.depth));
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  for (const n of nodes.values()) {
    const row = rows.get(n.depth) ?? 0;
    rows.set(n.depth, row + 1);
    at.set(n.key, { x: 10 + (maxDepth - n.depth) * (W + GAP_X), y: 10 + row * (H + GAP_Y) });
  }
  const columns = maxDepth - minDepth;
  const width = 20 + (columns + 1) * W + columns * GAP_X;
  const height = 20 + Math.max(1, ...rows.values()) * (H + GAP_Y);
  const root = svg('svg', { id: 'lineage-graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'lineage graph' });
  const arrow = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
    svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }));
  root.append(svg('defs', {}, arrow));
  edges.forEach((e, i) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    if (!a || !b) return;
    const x1 = a.x + W;
    const y1 = a.y + H / 2;
    const x2 = b.x;
    const y2 = b.y + H / 2;
    const mid = (x1 + x2) / 2;
    const path = svg('path', {
      d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`,
      class: 'edge',
      'marker-end': 'url(#arrow)',
      'data-edge': String(i),
      'data-from': e.from,
      'data-to': e.to,
    });
    path.append(svg('title', {}, `${nodes.get(e.from)?.title ?? ''} → ${nodes.get(e.to)?.title ?? ''}`));
    path.addEventListener('click', () => select(e.commit, e.input));
    root.append(path);
  });
  for (const n of nodes.values()) {
    const p = at.get(n.key) as { x: number; y: number };
    const g = svg('g', { class: `node ${n.kind}`, 'data-key': n.key, transform: `translate(${p.x} ${p.y})` });
    g.append(svg('title', {}, n.title), svg('rect', { width: W, height: H, rx: 5 }), svg('text', { x: 10, y: H / 2 + 4 }, n.label));
    if (n.kind === 'commit' && n.commit) {
      const c = n.commit;
      g.addEventListener('click', () => select(c, -1));
    } else if (n.kind === 'table' && n.ident) {
      const ident = n.ident;
      g.addEventListener('click', () => {
        location.hash = lineageHref(ident);
      });
    }
    root.append(g);
  }
  return root;
}

// A commit's inputs and column lineage; with `input` ≥ 0, only what comes from that input.
function showDetails(out: HTMLElement, c: Commit, input: number): void {
  clear(out);
  const inputName = (i: number) => {
    const inp = c.inputs[i];
    return inp ? inp.table ?? inp.location ?? '?' : '?';
  };
  const how = (t: any[]): string =>
    (Array.isArray(t) ? t : []).map((x: any) => (Array.isArray(x) ? x.filter((p) => typeof p === 'string').join(' ') : '')).join(', ');
  const rows: Child[][] = [];
  for (const [output, fields] of Object.entries(c.columns)) {
    for (const f of Array.isArray(fields) ? fields : []) {
      if (!Array.isArray(f) || (input >= 0 && f[0] !== input)) continue;
      rows.push([output, inputName(Number(f[0])), String(f[1] ?? ''), how(f[2])]);
    }
  }
  for (const f of c.dataset) {
    if (!Array.isArray(f) || (input >= 0 && f[0] !== input)) continue;
    rows.push([el('span', { class: 'muted' }, '(all rows)'), inputName(Number(f[0])), String(f[1] ?? ''), how(f[2])]);
  }
  const inputs: Child[][] = c.inputs
    .map((inp, i) => [inputName(i), inp['snapshot-id'] == null ? '' : String(inp['snapshot-id'])] as Child[])
    .filter((_, i) => input < 0 || i === input);
  out.append(
    el('p', { id: 'lineage-selected' }, `${c.operation} of ${c.table} at snapshot ${c.snapshot} (${fmtTime(c.at)})`, input >= 0 ? ` — from ${inputName(input)}` : ''),
    table(['input', 'snapshot read'], inputs, { id: 'lineage-inputs' }),
    rows.length ? table(['output column', 'input', 'input column', 'how'], rows, { id: 'lineage-columns' }) : el('p', { class: 'muted' }, 'no column lineage recorded'),
  );
}
