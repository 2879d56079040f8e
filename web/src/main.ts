// The console's shell: hash routing (#/, #/table/…, #/feed, #/sql, #/live/…, #/lineage/…), the
// sign-in form when the server asks for a token, and the pages (overview.ts, table.ts, feed.ts,
// sql.ts, live.ts, lineage.ts).
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { AuthError, setToken, signIn, token } from './api';
import { clear, el, errorBox } from './dom';
import { renderFeed } from './feed';
import { renderLineage } from './lineage';
import { renderLive } from './live';
import { renderOverview } from './overview';
import { renderSql } from './sql';
import { renderTable } from './table';

let current: AbortController | null = null;

function main(): HTMLElement {
  return document.getElementById('main') as HTMLElement;
}

function showWho(): void {
  const who = document.getElementById('who') as HTMLElement;
  clear(who);
  if (token()) {
    const out = el('button', { type: 'button', id: 'sign-out' }, 'Sign out');
    out.addEventListener('click', () => {
      setToken(null);
      route();
    });
    who.append(el('span', { class: 'muted' }, 'signed in '), out);
  }
}

function showSignIn(message: string): void {
  const m = main();
  clear(m);
  const id = el('input', { id: 'client-id', autocomplete: 'username', required: '' });
  const secret = el('input', { id: 'client-secret', type: 'password', autocomplete: 'current-password' });
  const pasted = el('input', { id: 'token', type: 'password', autocomplete: 'off' });
  const note = el('p', { class: 'error', role: 'alert', id: 'sign-in-error' }, message);
  const credentials = el(
    'form',
    { id: 'sign-in' },
    el('h3', {}, 'OAuth2 client credentials'),
    el('label', { for: 'client-id' }, 'client id'),
    id,
    el('label', { for: 'client-secret' }, 'client secret'),
    secret,
    el('button', { type: 'submit' }, 'Sign in'),
  );
  const tokenForm = el(
    'form',
    { id: 'token-form' },
    el('h3', {}, 'or a bearer token'),
    el('label', { for: 'token' }, 'token'),
    pasted,
    el('button', { type: 'submit' }, 'Use token'),
  );
  credentials.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await signIn(id.value, secret.value);
      route();
    } catch (err) {
      note.textContent = err instanceof Error ? err.message : String(err);
    }
  });
  tokenForm.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(pasted.value.trim() || null);
    route();
  });
  m.append(
    el('section', { class: 'card sign-in' }, el('h2', {}, 'Sign in'),
      el('p', { class: 'muted' }, 'This server asks for the same token as its REST catalog. The token is kept in this tab only.'),
      note, credentials, tokenForm),
  );
  showWho();
}

async function route(): Promise<void> {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const m = main();
  clear(m);
  showWho();
  const hash = location.hash.replace(/^#/, '') || '/';
  const page = hash.startsWith('/feed') ? 'feed' : hash.startsWith('/sql') ? 'sql' : 'overview';
  for (const a of Array.from(document.querySelectorAll<HTMLAnchorElement>('nav a'))) {
    a.classList.toggle('active', a.dataset.nav === page);
  }
  // A table in a hash: the JSON array of its namespace's levels and its name.
  const tableOf = (rest: string): string[] => {
    const parts = JSON.parse(decodeURIComponent(rest));
    if (!Array.isArray(parts) || parts.length < 2 || !parts.every((p) => typeof p === 'string')) throw new Error('not a table');
    return parts;
  };
  try {
    if (hash.startsWith('/table/')) {
      await renderTable(m, tableOf(hash.slice('/table/'.length)), controller.signal);
    } else if (hash.startsWith('/lineage/')) {
      await renderLineage(m, tableOf(hash.slice('/lineage/'.length)), controller.signal);
    } else if (hash.startsWith('/live/')) {
      await renderLive(m, tableOf(hash.slice('/live/'.length)), controller.signal);
    } else if (hash.startsWith('/sql')) {
      await renderSql(m, controller.signal);
    } else if (hash.startsWith('/feed')) {
      await renderFeed(m, controller.signal);
    } else {
      await renderOverview(m, controller.signal);
    }
    document.body.dataset.ready = 'true';
  } catch (e) {
    if (controller.signal.aborted) return;
    if (e instanceof AuthError) {
      showSignIn(token() ? 'The server refused this token: sign in again.' : 'Sign in to see the lake.');
      document.body.dataset.ready = 'true';
      return;
    }
    m.append(errorBox(e instanceof Error ? e.message : String(e)));
    document.body.dataset.ready = 'true';
  }
}

window.addEventListener('hashchange', () => {
  document.body.dataset.ready = 'false';
  route();
});
route();
