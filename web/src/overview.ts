// The overview: the namespaces as a tree with their tables (rows and bytes of the current
// snapshot), commits per minute over the last hour (the change feed's events endpoint) and the
// server's health (/healthz, /metrics), the OpenLineage emitter's among it.
import uPlot from 'uplot';
import { base, getJson, Ident, identText, listAll, nsPath, request, tablePath } from './api';
import { append, clear, el, errorBox, fmtBytes, fmtInt, fmtTime, section } from './dom';

export function tableHref(i: Ident): string {
  return `#/table/${encodeURIComponent(JSON.stringify([...i.namespace, i.name]))}`;
}

export async function renderOverview(main: HTMLElement, signal: AbortSignal): Promise<void> {
  const health = section('Server health', el('p', { class: 'muted' }, 'Loading…'));
  const chart = section('Commits per minute (last hour)', el('p', { class: 'muted' }, 'Loading…'));
  const tree = section('Namespaces and tables', el('p', { class: 'muted' }, 'Loading…'));
  main.append(el('div', { class: 'grid' }, health, chart), tree);
  const root = await base();
  await Promise.all([fillTree(tree, root, signal), fillChart(chart, root, signal), fillHealth(health, signal)]);
}

// Loads run four at a time, each when its row first scrolls into view: a lake of thousands of
// tables costs the loads of the rows one looks at, not one per table.
function lazyLoader(signal: AbortSignal): (row: Element, load: () => Promise<void>) => void {
  const queue: Array<() => Promise<void>> = [];
  const pending = new Map<Element, () => Promise<void>>();
  let running = 0;
  const pump = () => {
    while (running < 4 && queue.length && !signal.aborted) {
      const next = queue.shift()!;
      running++;
      next().finally(() => {
        running--;
        pump();
      });
    }
  };
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const load = e.isIntersecting ? pending.get(e.target) : undefined;
      if (!load) continue;
      pending.delete(e.target);
      observer.unobserve(e.target);
      queue.push(load);
    }
    pump();
  });
  signal.addEventListener('abort', () => observer.disconnect(), { once: true });
  return (row, load) => {
    pending.set(row, load);
    observer.observe(row);
  };
}

async function fillTree(card: HTMLElement, root: string, signal: AbortSignal): Promise<void> {
  const stats: Array<[Element, () => Promise<void>]> = [];
  let tables = 0;
  let namespaces = 0;
  const branch = async (parent: string[]): Promise<HTMLElement> => {
    const q = parent.length ? `?parent=${nsPath(parent)}` : '';
    const children = await listAll<string[]>(`${root}namespaces${q}`, 'namespaces', signal);
    const list = el('ul', { class: parent.length ? 'tree' : 'tree root' });
    for (const levels of children) {
      namespaces++;
      const idents = await listAll<Ident>(`${root}namespaces/${nsPath(levels)}/tables`, 'identifiers', signal);
      const item = el('li', { class: 'ns' }, el('span', { class: 'ns-name' }, levels[levels.length - 1]));
      if (idents.length) {
        const rows = idents.map((i) => {
          tables++;
          const rowsCell = el('td', { class: 'num' }, '…');
          const bytesCell = el('td', { class: 'num' }, '…');
          const filesCell = el('td', { class: 'num' }, '…');
          const snapsCell = el('td', { class: 'num' }, '…');
          const load = async () => {
            try {
              const t = await getJson(await tablePath(i.namespace, i.name), { signal });
              const m = t.metadata ?? {};
              const current = (m.snapshots ?? []).find((s: any) => s['snapshot-id'] === m['current-snapshot-id']);
              const summary = current?.summary ?? {};
              rowsCell.textContent = fmtInt(summary['total-records'] ?? (current ? null : 0));
              bytesCell.textContent = fmtBytes(summary['total-files-size'] ?? (current ? null : 0));
              filesCell.textContent = fmtInt(summary['total-data-files'] ?? (current ? null : 0));
              snapsCell.textContent = fmtInt((m.snapshots ?? []).length);
            } catch (e) {
              rowsCell.textContent = bytesCell.textContent = filesCell.textContent = snapsCell.textContent = '!';
              rowsCell.title = String(e);
            }
          };
          const tr = el(
            'tr',
            {},
            el('td', {}, el('a', { href: tableHref(i), 'data-table': identText(i) }, i.name)),
            rowsCell,
            bytesCell,
            filesCell,
            snapsCell,
          );
          stats.push([tr, load]);
          return tr;
        });
        const head = el('tr', {}, ...['table', 'rows', 'bytes', 'data files', 'snapshots'].map((h) => el('th', {}, h)));
        item.append(el('table', { class: 'tables' }, el('thead', {}, head), el('tbody', {}, ...rows)));
      }
      item.append(await branch(levels));
      list.append(item);
    }
    return list;
  };
  try {
    const top = await branch([]);
    clear(card);
    append(card, el('h2', {}, 'Namespaces and tables'),
      el('p', { class: 'muted', id: 'counts' }, `${fmtInt(namespaces)} namespaces, ${fmtInt(tables)} tables`), top);
    // The page shows at once; each row fills in as it comes into view.
    const whenVisible = lazyLoader(signal);
    for (const [tr, load] of stats) whenVisible(tr, load);
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
