// The live commit feed: every commit as it lands, from the Server-Sent Events change feed read
// with fetch() (an EventSource cannot send the Authorization header). What was shown and the
// last commit_seq seen are kept in sessionStorage, so that a reload resumes right after it
// (Last-Event-ID) with nothing missed and nothing shown twice.
import { authHeaders, AuthError, base, identText, parseJson, request } from './api';
import { Child, clear, el, fmtInt, fmtTime, section } from './dom';
import { tableHref } from './overview';

const SEEN_KEY = 'skade.console.feed';
const KEEP = 500;

interface Commit {
  seq: number;
  table: string;
  ident: { namespace: string[]; name: string };
  operation: string;
  snapshot: string;
  added: number;
  deleted: number;
  at: number;
}

function load(): Commit[] {
  try {
    const v = JSON.parse(sessionStorage.getItem(SEEN_KEY) ?? '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

function save(commits: Commit[]): void {
  sessionStorage.setItem(SEEN_KEY, JSON.stringify(commits.slice(-KEEP)));
}

export async function renderFeed(main: HTMLElement, signal: AbortSignal): Promise<void> {
  const root = await base();
  const commits = load();
  const filter = el('input', { type: 'search', id: 'feed-filter', placeholder: 'filter by table (e.g. db.orders)', 'aria-label': 'filter by table' });
  const status = el('span', { class: 'status', id: 'feed-status' }, 'connecting…');
  const body = el('tbody', { id: 'feed-rows' });
  const head = el('tr', {}, ...['commit_seq', 'committed at', 'table', 'operation', 'snapshot', 'rows added', 'rows deleted'].map((h) => el('th', {}, h)));
  main.append(
    section(
      'Live commits',
      el('div', { class: 'toolbar' }, filter, status),
      el('table', { id: 'feed' }, el('thead', {}, head), body),
    ),
  );
  const row = (c: Commit): HTMLTableRowElement => {
    const cells: Child[] = [
      String(c.seq),
      fmtTime(c.at),
      el('a', { href: tableHref(c.ident) }, c.table),
      c.operation,
      c.snapshot,
      fmtInt(c.added),
      fmtInt(c.deleted),
    ];
    const tr = el('tr', { 'data-seq': String(c.seq), 'data-table': c.table }, ...cells.map((x) => el('td', {}, x)));
    tr.hidden = !matches(c.table);
    return tr;
  };
  const matches = (t: string) => !filter.value || t.toLowerCase().includes(filter.value.trim().toLowerCase());
  filter.addEventListener('input', () => {
    for (const tr of Array.from(body.rows)) tr.hidden = !matches(tr.dataset.table ?? '');
  });
  for (const c of commits) body.prepend(row(c));

  await followCommits(root, signal, {
    // Resume after the last commit shown; on a first visit, start with the last 50 commits.
    start: async () => {
      const last = commits.length ? commits[commits.length - 1].seq : null;
      return last !== null ? { lastEventId: String(last) } : { after: Math.max(0, (await logHead(root, signal)) - 50) };
    },
    status,
    onEvent: (ev) => {
      const ident = ev.identifier ?? { namespace: [], name: '?' };
      const c: Commit = {
        seq: Number(ev['commit-seq']),
        table: identText(ident),
        ident,
        operation: String(ev.operation ?? ''),
        snapshot: ev['snapshot-id'] == null ? '' : String(ev['snapshot-id']),
        added: Number(ev['added-records'] ?? 0),
        deleted: Number(ev['deleted-records'] ?? 0),
        at: Math.floor(Number(ev['committed-at-us'] ?? 0) / 1000),
      };
      if (commits.length && c.seq <= commits[commits.length - 1].seq) return;  // already shown
      commits.push(c);
      if (commits.length > KEEP) commits.splice(0, commits.length - KEEP);
      save(commits);
      body.prepend(row(c));
      while (body.rows.length > KEEP) body.deleteRow(body.rows.length - 1);
    },
  });
  clear(body);
}

// Where a commit stream starts: after a commit_seq (Last-Event-ID, as a reconnecting
// EventSource sends it), after a log position (?after=), or, neither given, from now on.
export interface StreamStart {
  lastEventId?: string;
  after?: number;
}

export interface CommitFollower {
  start: () => Promise<StreamStart>;  // asked before the first connection
  tables?: string[];  // only these tables' commits (the server filters: ?tables=)
  // Says "live" (and marks the page ready) while connected, why not while reconnecting.
  status: HTMLElement;
  onEvent: (event: any) => void;
}

// Follows the change feed's Server-Sent Events until `signal` aborts: each commit event to
// `onEvent`, reconnecting with backoff after the last commit_seq seen (nothing missed, nothing
// twice). No polling: the server pushes each commit as it lands.
export async function followCommits(root: string, signal: AbortSignal, f: CommitFollower): Promise<void> {
  let backoff = 500;
  let lastSeq: string | null = null;
  while (!signal.aborted) {
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream', ...authHeaders() };
      const q = new URLSearchParams();
      if (f.tables?.length) q.set('tables', f.tables.join(','));
      const from: StreamStart = lastSeq !== null ? { lastEventId: lastSeq } : await f.start();
      if (from.lastEventId !== undefined) headers['Last-Event-ID'] = from.lastEventId;
      else if (from.after !== undefined) q.set('after', String(from.after));
      const query = q.toString();
      const res = await request(`${root}events/stream${query ? `?${query}` : ''}`, { headers, signal });
      f.status.textContent = 'live';
      f.status.className = 'status live';
      document.body.dataset.ready = 'true';
      backoff = 500;
      await readEvents(res, signal, (data) => {
        const ev = parseJson(data);
        if (ev['commit-seq'] != null) lastSeq = String(ev['commit-seq']);
        f.onEvent(ev);
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof AuthError) throw e;
      f.status.textContent = `reconnecting (${e instanceof Error ? e.message : String(e)})`;
      f.status.className = 'status';
    }
    if (signal.aborted) return;
    // The stream ended (token expired, server restarted): resume after the last commit seen.
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 10_000);
  }
}

export async function logHead(root: string, signal: AbortSignal): Promise<number> {
  const res = await request(`${root}events`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ 'page-size': 1, 'object-types': ['namespace'] }),
    signal,
  });
  const body = await res.json();
  return Number(body['x-skade-log-head'] ?? 0);
}

// Server-Sent Events (the HTML standard's event-stream format): calls `onData` with each
// event's data; returns when the stream ends.
async function readEvents(res: Response, signal: AbortSignal, onData: (data: string) => void): Promise<void> {
  if (!res.body) throw new Error('no response body');
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true });
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) onData(data);
    }
  }
}
