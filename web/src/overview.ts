// The overview: the namespaces as a tree with their tables (rows and bytes of the current
// snapshot; a virtualised list, paged from the server), commits per minute over the last hour (the change feed's events endpoint) and the
// server's health (/healthz, /metrics), the OpenLineage emitter's among it.
import uPlot from 'uplot';
import { base, getJson, Ident, identText, request } from './api';
import { append, clear, el, errorBox, fmtBytes, fmtInt, fmtTime, section } from './dom';
import { PagedRows, tableSpacer, VirtualList } from './virtual';

export function tableHref(i: Ident): string {
  return `#/table/${encodeURIComponent(JSON.stringify([...i.namespace, i.name]))}`;
}

export async function renderOverview(main: HTMLElement, signal: AbortSignal): Promise<void> {
  const health = section('Server health', el('p', { class: 'muted' }, 'Loading…'));
  const chart = section('Commits per minute (last hour)', el('p', { class: 'muted' }, 'Loading…'));
  const tree = section('Namespaces and tables', el('p', { class: 'muted' }, 'Loading…'));
  main.append(el('div', { class: 'grid' }, health, chart), tree);
  const root = await base();
  await Promise.all([fillTree(tree, signal), fillChart(chart, root, signal), fillHealth(health, signal)]);
}

interface TreeRow {
  namespace: string[];
  name?: string;
  depth: number;
}

interface Stats {
  rows: string;
  bytes: string;
  files: string;
  snapshots: string;
  error?: string;
}

const ROW_HEIGHT = 28;
const TREE_PAGE = 500;

// A table's numbers from its metadata without history (/console/v1/table): those of its current
// snapshot's summary and how many snapshots it has.
async function loadStats(i: Ident, signal: AbortSignal): Promise<Stats> {
  const q = new URLSearchParams({ table: identText(i) });
  const t = await getJson(`/console/v1/table?${q}`, { signal });
  const m = t.metadata ?? {};
  const current = (m.snapshots ?? []).find((s: any) => s['snapshot-id'] === m['current-snapshot-id']);
  const summary = current?.summary ?? {};
  return {
    rows: fmtInt(summary['total-records'] ?? (current ? null : 0)),
    bytes: fmtBytes(summary['total-files-size'] ?? (current ? null : 0)),
    files: fmtInt(summary['total-data-files'] ?? (current ? null : 0)),
    snapshots: fmtInt(t['snapshot-count'] ?? 0),
  };
}

// The namespaces and their tables as one virtualised table, a page of the tree at a time
// (/console/v1/tree): a lake of 10,000 tables draws the few dozen rows in view. Each table's
// numbers load when its row is drawn, four loads at a time, and only while it is still in view.
async function fillTree(card: HTMLElement, signal: AbortSignal): Promise<void> {
  const head = el('tr', {}, ...['table', 'rows', 'bytes', 'data files', 'snapshots'].map((h) => el('th', {}, h)));
  const body = el('tbody', { id: 'tree-rows' });
  const viewport = el('div', { class: 'vlist', id: 'tree' }, el('table', { class: 'tables' }, el('thead', {}, head), body));
  const stats = new Map<string, Stats>();
  const drawn = new Map<string, HTMLTableCellElement[]>();
  const queue: Array<{ key: string; ident: Ident }> = [];
  const asked = new Set<string>();  // queued or loading
  let running = 0;
  let list: VirtualList | null = null;
  let counts = '';
  const fill = (cells: HTMLTableCellElement[], s: Stats) => {
    [cells[0].textContent, cells[1].textContent, cells[2].textContent, cells[3].textContent] = [s.rows, s.bytes, s.files, s.snapshots];
    if (s.error) cells[0].title = s.error;
  };
  const pump = () => {
    while (running < 4 && queue.length && !signal.aborted) {
      const { key, ident } = queue.shift()!;
      // Scrolled past before its turn: loaded when it is drawn again.
      if (!drawn.get(key)?.[0].isConnected) {
        asked.delete(key);
        continue;
      }
      running++;
      loadStats(ident, signal)
        .catch((e): Stats => ({ rows: '!', bytes: '!', files: '!', snapshots: '!', error: String(e) }))
        .then((s) => {
          stats.set(key, s);
          // The row as drawn now (it may have been drawn again while this loaded).
          const cells = drawn.get(key);
          if (cells) fill(cells, s);
        })
        .finally(() => {
          running--;
          pump();
        });
    }
  };
  const tree = new PagedRows<TreeRow>(
    TREE_PAGE,
    async (offset, limit) => {
      const page: any = await getJson(`/console/v1/tree?offset=${offset}&limit=${limit}`, { signal });
      counts = `${fmtInt(page.namespaces)} namespaces, ${fmtInt(page.tables)} tables`;
      return { rows: page.rows ?? [], total: page.total ?? 0 };
    },
    () => list?.redraw(),
    (e) => {
      if (!signal.aborted) card.append(errorBox(String(e)));
    },
  );
  const render = (i: number): HTMLElement => {
    const r = tree.get(i);
    if (!r) return el('tr', { class: 'vrow loading' }, el('td', { colspan: '5', class: 'muted' }, '…'));
    const indent = `indent d${Math.min(r.depth, 6)}`;
    if (r.name === undefined) {
      return el('tr', { class: 'vrow nsrow' },
        el('td', { colspan: '5' }, el('span', { class: indent }, el('span', { class: 'ns-name' }, r.namespace[r.namespace.length - 1]))));
    }
    const ident: Ident = { namespace: r.namespace, name: r.name };
    const key = identText(ident);
    const cells = [0, 1, 2, 3].map(() => el('td', { class: 'num' }, '…'));
    drawn.set(key, cells);
    const known = stats.get(key);
    if (known) fill(cells, known);
    else if (!asked.has(key)) {
      asked.add(key);
      queue.push({ key, ident });
      queueMicrotask(pump);
    }
    return el('tr', { class: 'vrow' },
      el('td', {}, el('span', { class: indent }, el('a', { href: tableHref(ident), 'data-table': key }, r.name))), ...cells);
  };
  try {
    await tree.start();
    clear(card);
    append(card, el('h2', {}, 'Namespaces and tables'), el('p', { class: 'muted', id: 'counts' }, counts), viewport);
    list = new VirtualList({ rowHeight: ROW_HEIGHT, items: body, viewport, spacer: tableSpacer(5), render });
    list.setCount(tree.total);
  } catch (e) {
    if (signal.aborted) return;
    clear(card);
    append(card, el('h2', {}, 'Namespaces and tables'), errorBox(String(e)));
    throw e;
  }
}

async function fillChart(card: HTMLElement, root: string, signal: AbortSignal): Promise<void> {
  const minute = 60_000;
  const end = Math.floor(Date.now() / minute) * minute + minute;
  const start = end - 60 * minute;
  const counts = new Array<number>(60).fill(0);
  let token: string | undefined;
  let total = 0;
  try {
    for (let page = 0; page < 50; page++) {
      const body: any = { 'page-size': 1000, 'after-timestamp-ms': start - 1 };
      if (token) body['continuation-token'] = token;
      const res: any = await getJson(`${root}events`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
      for (const ev of res.events ?? []) {
        const i = Math.floor((ev['timestamp-ms'] - start) / minute);
        if (i >= 0 && i < 60) {
          counts[i]++;
          total++;
        }
      }
      if (!res.events?.length || res['continuation-token'] === token) break;
      token = res['continuation-token'];
    }
  } catch (e) {
    if (signal.aborted) return;
    clear(card);
    append(card, el('h2', {}, 'Commits per minute (last hour)'), errorBox(String(e)));
    throw e;
  }
  clear(card);
  const holder = el('div', { class: 'chart', id: 'commit-chart' });
  append(card, el('h2', {}, 'Commits per minute (last hour)'),
    el('p', { class: 'muted' }, `${fmtInt(total)} commits in the last hour`), holder);
  const xs = counts.map((_, i) => (start + i * minute) / 1000);
  const bars = uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined;
  new uPlot(
    {
      width: Math.max(300, Math.min(640, card.clientWidth - 32)),
      height: 180,
      legend: { show: false },
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [{}, { label: 'commits', stroke: '#2b6cb0', fill: 'rgba(43,108,176,0.35)', paths: bars, points: { show: false } }],
      axes: [{}, { values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : '')) }],
    },
    [xs, counts],
    holder,
  );
}

// Prometheus text: the value of a metric, summed over its labels.
function metric(text: string, name: string): number | null {
  let sum: number | null = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m && m[1] === name) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

// Prometheus text: the value of label `label` of the first sample of `name` (the exposition
// format's escapes undone), or null.
function labelOf(text: string, name: string, label: string): string | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const at = line.indexOf(`${label}="`, name.length);
    if (at < 0) continue;
    let value = '';
    for (let i = at + label.length + 2; i < line.length; i++) {
      const c = line[i];
      if (c === '"') return value;
      if (c === '\\' && i + 1 < line.length) {
        const next = line[++i];
        value += next === 'n' ? '\n' : next;
      } else {
        value += c;
      }
    }
  }
  return null;
}

function fmtAge(seconds: number | null, now: number): string {
  if (seconds === null) return '';
  const ago = Math.max(0, Math.round(now / 1000 - seconds));
  const when = fmtTime(seconds * 1000);
  return ago < 120 ? `${when} (${ago} s ago)` : when;
}

// The OpenLineage emitter of `skade serve`, from its skade_lineage_* metrics: none configured,
// or its counts, whether it is failing now, and its last error.
function lineageRows(text: string): Array<[string, string]> {
  const configured = metric(text, 'skade_lineage_emitter_configured');
  if (configured === null) return [['emitter', 'not reported by this server']];
  if (configured === 0) return [['emitter', 'not configured (serve --openlineage-url, --openlineage-file or --openlineage-console)']];
  const now = Date.now();
  const failing = metric(text, 'skade_lineage_failing_attempts') ?? 0;
  const rows: Array<[string, string]> = [
    ['emitter', failing > 0 ? `failing (${fmtInt(failing)} attempts in a row, retrying)` : 'delivering'],
    ['events sent', fmtInt(metric(text, 'skade_lineage_events_sent_total'))],
    ['failed attempts', fmtInt(metric(text, 'skade_lineage_send_failures_total'))],
    ['events refused', fmtInt(metric(text, 'skade_lineage_events_refused_total'))],
    ['failed writes reported', fmtInt(metric(text, 'skade_lineage_failed_writes_sent_total'))],
    ['commits pending', fmtInt(metric(text, 'skade_lineage_pending_commits'))],
    ['delivered through commit', fmtInt(metric(text, 'skade_lineage_delivered_commit_seq'))],
  ];
  const sent = metric(text, 'skade_lineage_last_sent_timestamp_seconds');
  if (sent !== null) rows.push(['last sent', fmtAge(sent, now)]);
  const errorAt = metric(text, 'skade_lineage_last_error_timestamp_seconds');
  const message = labelOf(text, 'skade_lineage_last_error_info', 'message');
  rows.push(['last error', errorAt === null ? 'none' : `${fmtAge(errorAt, now)}: ${message ?? ''}`]);
  return rows;
}

async function fillHealth(card: HTMLElement, signal: AbortSignal): Promise<void> {
  const rows: Array<[string, string]> = [];
  let lineage: Array<[string, string]> = [];
  try {
    const h = await fetch('/healthz', { signal, cache: 'no-store' });
    rows.push(['/healthz', h.ok ? 'ok' : `${h.status}`]);
  } catch (e) {
    rows.push(['/healthz', `unreachable (${e})`]);
  }
  try {
    const text = await (await request('/metrics', { signal })).text();
    const count = metric(text, 'skade_rest_request_duration_seconds_count');
    const sum = metric(text, 'skade_rest_request_duration_seconds_sum');
    rows.push(
      ['requests served', fmtInt(metric(text, 'skade_rest_requests_total'))],
      ['mean latency', count && sum !== null ? `${((sum / count) * 1000).toFixed(2)} ms` : '–'],
      ['commits (REST)', fmtInt(metric(text, 'skade_rest_commits_total'))],
      ['commit conflicts', fmtInt(metric(text, 'skade_rest_commit_conflicts_total'))],
      ['commits re-based', fmtInt(metric(text, 'skade_rest_commits_rebased_total'))],
      ['open connections', fmtInt(metric(text, 'skade_rest_connections'))],
      ['open change-feed streams', fmtInt(metric(text, 'skade_rest_event_streams'))],
    );
    lineage = lineageRows(text);
  } catch (e) {
    if (signal.aborted) return;
    rows.push(['/metrics', String(e)]);
  }
  clear(card);
  const list = (id: string, entries: Array<[string, string]>) => {
    const dl = el('dl', { class: 'health', id });
    for (const [k, v] of entries) dl.append(el('dt', {}, k), el('dd', {}, v));
    return dl;
  };
  append(card, el('h2', {}, 'Server health'), list('health', rows));
  if (lineage.length) {
    const emitter = list('lineage-health', lineage);
    // Coloured by the stylesheet (the CSP allows no inline styles).
    if (lineage[0][1].startsWith('failing')) emitter.dataset.state = 'failing';
    append(card, el('h3', {}, 'OpenLineage emitter'), emitter);
  }
}

export { identText };
