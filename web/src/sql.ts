// The SQL page and the query runner it shares with the live tables pane: read queries sent to
// POST /console/v1/query (the server runs them through Flight SQL's locked-down path: reads only,
// a statement timeout, a row bound), cancelled with DELETE /console/v1/query/{id}, results shown
// in a grid in which every name and value is a text node.
import { ApiError, postJson, request } from './api';
import { clear, el, errorBox, fmtInt } from './dom';

export interface QueryColumn {
  name: string;
  type: string;
}

export interface QueryAnswer {
  id: string | null;
  columns: QueryColumn[];
  rows: (string | null)[][];
  more: boolean;
  'limited-by': string | null;
  'elapsed-ms': number;
}

// A name for a query, so that it can be cancelled while it runs (crypto.randomUUID needs a
// secure context; getRandomValues does not).
function newQueryId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// A name as SQL: double quotes around it, its own doubled (the server parses what it gets).
export function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

// A table as SQL names it: its namespace's levels joined by '.' are one schema name.
export function tableSql(namespace: string[], name: string): string {
  return `${quoteName(namespace.join('.'))}.${quoteName(name)}`;
}

// The rows of an answer as a grid: a header of column names (types as their titles), NULL shown
// as such, every value as text.
export function resultGrid(answer: QueryAnswer, id: string): HTMLTableElement {
  const head = el(
    'tr',
    {},
    ...answer.columns.map((c) => el('th', { title: c.type }, el('span', { class: 'col' }, c.name), el('span', { class: 'type' }, c.type))),
  );
  const body = el('tbody');
  for (const r of answer.rows) {
    body.appendChild(el('tr', {}, ...r.map((v) => (v === null ? el('td', { class: 'null' }, 'NULL') : el('td', {}, v)))));
  }
  return el('table', { id, class: 'rows' }, el('thead', {}, head), body);
}

// Runs one query at a time into `out` (a grid, or an error) and says how it went in `status`;
// the query running when `signal` aborts (the page is left) is cancelled on the server too.
export class QueryRunner {
  private running: string | null = null;

  constructor(
    private readonly out: HTMLElement,
    private readonly status: HTMLElement,
    private readonly prefix: string,
    signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => this.cancel(), { once: true });
  }

  busy(): boolean {
    return this.running !== null;
  }

  // Runs `sql`; the answer replaces what `out` showed. Whether it succeeded.
  async run(sql: string, limit: number): Promise<boolean> {
    if (this.running) return false;
    const id = newQueryId();
    this.running = id;
    this.out.dataset.state = 'running';
    this.status.textContent = 'running…';
    try {
      const answer = await postJson<QueryAnswer>('/console/v1/query', { sql, limit, id });
      clear(this.out);
      this.out.append(resultGrid(answer, `${this.prefix}-rows`));
      const more = answer.more ? ` (more rows: limited by ${answer['limited-by']})` : '';
      this.status.textContent = `${fmtInt(answer.rows.length)} rows in ${fmtInt(answer['elapsed-ms'])} ms${more}`;
      this.out.dataset.state = 'done';
      return true;
    } catch (e) {
      const cancelled = e instanceof ApiError && e.status === 499;
      const timedOut = e instanceof ApiError && e.status === 504;
      this.status.textContent = cancelled ? 'cancelled' : timedOut ? 'timed out' : 'failed';
      clear(this.out);
      const box = errorBox(e instanceof Error ? e.message : String(e));
      box.id = `${this.prefix}-error`;
      this.out.append(box);
      this.out.dataset.state = cancelled ? 'cancelled' : 'error';
      return false;
    } finally {
      this.running = null;
    }
  }

  // Cancels the running query, if any (its run() then reports it cancelled).
  cancel(): void {
    const id = this.running;
    if (!id) return;
    request(`/console/v1/query/${id}`, { method: 'DELETE' }).catch(() => {
      // ended meanwhile: nothing to cancel
    });
  }
}

const SQL_KEY = 'skade.console.sql';
const LIMITS = [100, 1000, 10000];

export async function renderSql(main: HTMLElement, signal: AbortSignal): Promise<void> {
  const text = el('textarea', { id: 'sql-text', rows: '8', spellcheck: 'false', 'aria-label': 'SQL query' });
  text.value = sessionStorage.getItem(SQL_KEY) ?? 'SHOW ALL TABLES';
  const run = el('button', { type: 'button', id: 'sql-run' }, 'Run');
  const cancel = el('button', { type: 'button', id: 'sql-cancel' }, 'Cancel');
  cancel.disabled = true;
  const limit = el('select', { id: 'sql-limit', 'aria-label': 'row limit' });
  for (const n of LIMITS) {
    const option = el('option', { value: String(n) }, `${fmtInt(n)} rows`);
    option.selected = n === 1000;
    limit.append(option);
  }
  const status = el('span', { class: 'status', id: 'sql-status' });
  const out = el('div', { id: 'sql-result' });
  const runner = new QueryRunner(out, status, 'sql', signal);
  const go = async () => {
    if (runner.busy()) return;
    sessionStorage.setItem(SQL_KEY, text.value);
    run.disabled = true;
    cancel.disabled = false;
    await runner.run(text.value, Number(limit.value));
    run.disabled = false;
    cancel.disabled = true;
  };
  run.addEventListener('click', go);
  cancel.addEventListener('click', () => runner.cancel());
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      go();
    }
  });
  main.append(
    el(
      'section',
      { class: 'card' },
      el('h2', {}, 'SQL'),
      el('p', { class: 'muted' }, 'Read queries over the lake (tables as ns.table; Ctrl+Enter runs). The server runs no writes from here, and stops a query at its timeout.'),
      text,
      el('div', { class: 'toolbar' }, run, cancel, limit, status),
      out,
    ),
  );
  text.focus();
}
