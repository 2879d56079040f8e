// Live rows: a query over one table (by default its newest rows) shown in a grid that is read
// again whenever the change feed reports a commit of that table — no polling timer. The feed is
// followed from the log position read before the first query, so no commit between the two is
// missed.
import { base, getJson, Ident, identText, tablePath } from './api';
import { el, fmtTime } from './dom';
import { followCommits, logHead } from './feed';
import { tableHref } from './overview';
import { QueryRunner, quoteName, tableSql } from './sql';

const ROWS = 50;

export function liveHref(i: Ident): string {
  return `#/live/${encodeURIComponent(JSON.stringify([...i.namespace, i.name]))}`;
}

// The table's newest rows: ordered by its first timestamp (or date) column, latest first, when
// it has one; otherwise any rows.
function defaultQuery(ident: Ident, metadata: any): string {
  const schemas: any[] = metadata?.schemas ?? [];
  const schema = schemas.find((s) => s['schema-id'] === metadata?.['current-schema-id']) ?? schemas[schemas.length - 1];
  const time = (schema?.fields ?? []).find((f: any) => typeof f.type === 'string' && /^(timestamp|timestamptz|timestamp_ns|timestamptz_ns|date)$/.test(f.type));
  const order = time ? ` ORDER BY ${quoteName(time.name)} DESC` : '';
  return `SELECT * FROM ${tableSql(ident.namespace, ident.name)}${order} LIMIT ${ROWS}`;
}

export async function renderLive(main: HTMLElement, parts: string[], signal: AbortSignal): Promise<void> {
  const ident: Ident = { namespace: parts.slice(0, -1), name: parts[parts.length - 1] };
  const name = identText(ident);
  const root = await base();
  const loaded = await getJson(await tablePath(ident.namespace, ident.name), { signal });
  const text = el('textarea', { id: 'live-sql', rows: '3', spellcheck: 'false', 'aria-label': 'query over the table' });
  text.value = defaultQuery(ident, loaded.metadata);
  const apply = el('button', { type: 'button', id: 'live-apply' }, 'Apply');
  const feed = el('span', { class: 'status', id: 'live-status' }, 'connecting…');
  const status = el('span', { class: 'muted', id: 'live-query-status' });
  const when = el('span', { class: 'muted', id: 'live-when' });
  const out = el('div', { id: 'live-result' });
  main.append(
    el('h1', { id: 'table-title' }, el('span', { class: 'muted' }, 'live: '), el('a', { href: tableHref(ident) }, name)),
    el(
      'section',
      { class: 'card' },
      el('p', { class: 'muted' }, 'Read again on every commit of this table, as the change feed reports it.'),
      text,
      el('div', { class: 'toolbar' }, apply, feed, status, when),
      out,
    ),
  );
  const runner = new QueryRunner(out, status, 'live', signal);
  // One read at a time; commits that land during a read cause one more read after it.
  let reading = false;
  let again = false;
  let seq = '';
  const reread = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    do {
      again = false;
      const readSeq = seq;
      await runner.run(text.value, ROWS);
      out.dataset.seq = readSeq;
      when.textContent = `read ${fmtTime(Date.now())}${readSeq ? ` after commit ${readSeq}` : ''}`;
    } while (again && !signal.aborted);
    reading = false;
  };
  apply.addEventListener('click', () => reread());
  const head = await logHead(root, signal);
  await reread();
  // The server filters by table where the name can be listed (no ',' or '.' inside a level);
  // the page checks each event's table either way.
  const listable = [...ident.namespace, ident.name].every((p) => !/[.,]/.test(p));
  await followCommits(root, signal, {
    start: async () => ({ after: head }),
    tables: listable ? [name] : undefined,
    status: feed,
    onEvent: (ev) => {
      const who = ev.identifier ? identText(ev.identifier) : '';
      if (who !== name || (ev.identifier?.namespace ?? []).join('\u001f') !== ident.namespace.join('\u001f')) return;
      seq = String(ev['commit-seq']);
      reread();
    },
  });
}
