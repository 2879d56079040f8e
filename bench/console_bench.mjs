// The web console on a large lake (issue 37): first paint and time to interactive of the overview
// and of a table's page, in Debian's chromium driven headless by playwright-core (the console
// browser test's, web/package-lock.json), against `skade serve`. Two lakes made by
// console_lake.py in the same run: the large one (--tables tables, one table of --snapshots
// snapshots) and a baseline of 10 tables and 10 snapshots; each page is loaded --runs times per
// lake, alternating, each in a fresh browser context (nothing cached), after one warm-up load.
//
// Before the browser, the server alone: the first page of the large table's snapshots with its
// metadata not yet read by the server (cold) and again (warm).
// Per load, from the page's own clocks (ms since navigation start):
//   - first paint: the first contentful paint (the shell, before any data);
//   - content: when the page's list first shows rows (the overview's tree, the table's timeline);
//   - interactive: the page's loads done (body[data-ready=true]) and the last long task (> 50 ms
//     of main thread, PerformanceObserver 'longtask') ended, whichever is later;
//   - DOM rows: the rows the list holds; scroll end: from scrolling the list to its end to its
//     last row drawn.
//
// --ui DIR serves the console's pages from DIR instead (web/build.mjs's output, e.g. of an older
// commit, for a before/after comparison) through a proxy in this process that passes every other
// request to `skade serve`; lists that are not virtualised are then counted as drawn and scrolled
// with the window.
//   node bench/console_bench.mjs --skade build/src/skade [--tables 10000] [--snapshots 100000] [--runs 5] [--keep DIR] [--ui DIR]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os, { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg, chromiumArgs, chromiumPath, requireChromium, skadeBinary, startServe } from '../tests/console/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const skadeBin = skadeBinary();
const tables = Number(arg('--tables', '10000'));
const snapshots = Number(arg('--snapshots', '100000'));
const runs = Number(arg('--runs', '5'));
const chromium = requireChromium('throw');

const work = arg('--keep', null) ?? mkdtempSync(join(tmpdir(), 'skade-console-bench-'));

function makeLake(name, t, s) {
  const lake = join(work, name);
  if (existsSync(join(lake, 'catalog.db'))) return lake;
  const r = spawnSync('python3', [join(here, 'console_lake.py'), '--skade', skadeBin, '--warehouse', lake,
    '--tables', String(t), '--snapshots', String(s)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`console_lake.py failed (${r.status})`);
  process.stdout.write(r.stdout);
  return lake;
}

async function serve(lake) {
  const { child, port } = await startServe(skadeBin,
    ['--warehouse', lake, '-q', 'serve', '--flight-port', '0', '--rest-port', '0'], 60_000);
  return { child, origin: `http://127.0.0.1:${port}` };
}

// The pages from `dir`, everything else from `origin`.
async function uiProxy(dir, origin) {
  const target = new URL(origin);
  const server = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/ui' || path === '/ui/' || path.startsWith('/ui/assets/')) {
      const file = path.startsWith('/ui/assets/') ? join(dir, path.slice(4)) : join(dir, 'index.html');
      const type = file.endsWith('.js') ? 'text/javascript' : file.endsWith('.css') ? 'text/css' : 'text/html';
      res.writeHead(200, { 'Content-Type': type }).end(readFileSync(file));
      return;
    }
    const upstream = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

const PAGES = {
  overview: { hash: '#/', list: '#tree-rows', rows: '#tree-rows tr.vrow', plainRows: 'a[data-table]', view: '#tree', last: (t) => `a[data-table="bench.t${String(t - 1).padStart(5, '0')}"]` },
  table: { hash: `#/table/${encodeURIComponent(JSON.stringify(['bench', 'history']))}`, list: '#snapshots', rows: '#snapshots li.vrow', plainRows: '#snapshots li', view: '#snapshots-view', last: () => '#snapshots li[data-snapshot="1000000000"]' },
};

// Recorded in the page before its scripts: paints, long tasks, when data-ready turned true and
// when the list first held rows.
function probe() {
  window.__bench = { longTaskEnd: 0, ready: null, content: null };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longTaskEnd = Math.max(window.__bench.longTaskEnd, e.startTime + e.duration);
  }).observe({ type: 'longtask', buffered: true });
  new MutationObserver(() => {
    const b = window.__bench;
    if (b.ready === null && document.body?.dataset.ready === 'true') b.ready = performance.now();
    if (b.content === null && document.querySelector('a[data-table], #snapshots li.vrow[data-snapshot], #snapshots:not(.vrows) li')) {
      b.content = performance.now();
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-ready'] });
}

async function load(browser, origin, which, lakeTables) {
  const p = PAGES[which];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.addInitScript(probe);
  await page.goto(`${origin}/ui/${p.hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
  // Long tasks are reported after they end: a moment for the last one.
  await page.waitForTimeout(300);
  const m = await page.evaluate(() => {
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const b = window.__bench;
    return { paint: paint ? paint.startTime : null, content: b.content, ready: b.ready, interactive: Math.max(b.ready ?? 0, b.longTaskEnd) };
  });
  const virtual = (await page.locator(p.view).count()) > 0;
  m.domRows = await page.locator(virtual ? p.rows : p.plainRows).count();
  // Scroll the list to its end: how long until its last row is drawn (null: never, within 10 s).
  const started = Date.now();
  if (virtual) await page.$eval(p.view, (v) => v.scrollTo(0, v.scrollHeight));
  else await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  m.scrollEnd = await page.waitForSelector(p.last(lakeTables), { timeout: 10_000 }).then(() => Date.now() - started, () => null);
  m.errors = errors.length;
  await context.close();
  return m;
}

const median = (xs) => {
  const s = xs.filter((x) => x !== null).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
};
const fmt = (x) => (x === null ? '–' : x.toFixed(0));

const big = makeLake('large', tables, snapshots);
const small = makeLake('small', 10, 10);
const servers = { large: await serve(big), small: await serve(small) };
const uiDir = arg('--ui', null);
const proxies = [];
if (uiDir) {
  for (const s of Object.values(servers)) {
    const proxy = await uiProxy(resolve(uiDir), s.origin);
    proxies.push(proxy.server);
    s.pages = proxy.origin;
  }
}
// The server's side alone: the history table's first page of snapshots, first (its metadata not
// yet read by the server) and again (read and kept by the catalog).
for (const lake of ['small', 'large']) {
  const times = [];
  for (let i = 0; i < 2; i++) {
    const t = performance.now();
    const res = await fetch(`${servers[lake].origin}/console/v1/snapshots?table=bench.history&limit=500`);
    await res.arrayBuffer();
    times.push(performance.now() - t);
  }
  console.log(`server ${lake}: first page of bench.history's snapshots ${times[0].toFixed(0)} ms cold, ${times[1].toFixed(0)} ms warm`);
}
const sizes = { large: tables, small: 10 };
const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: chromiumArgs,
});
const results = {};
try {
  for (const which of Object.keys(PAGES)) {
    for (const lake of ['small', 'large']) await load(browser, servers[lake].pages ?? servers[lake].origin, which, sizes[lake]);  // warm-up
    for (let i = 0; i < runs; i++) {
      for (const lake of ['small', 'large']) {
        const m = await load(browser, servers[lake].pages ?? servers[lake].origin, which, sizes[lake]);
        (results[`${which} ${lake}`] ??= []).push(m);
        console.log(`${which} ${lake} run ${i + 1}: ${JSON.stringify(m)}`);
      }
    }
  }
} finally {
  await browser.close();
  for (const p of proxies) p.close();
  for (const s of Object.values(servers)) s.child.kill('SIGTERM');
  if (!arg('--keep', null)) rmSync(work, { recursive: true, force: true });
}
console.log(`\nload average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`| page, lake | first paint | content | interactive | DOM rows | scroll to end | errors |`);
console.log('|---|---|---|---|---|---|---|');
for (const [key, ms] of Object.entries(results)) {
  const col = (k) => fmt(median(ms.map((m) => m[k])));
  console.log(`| ${key} | ${col('paint')} ms | ${col('content')} ms | ${col('interactive')} ms | ${col('domRows')} | ${col('scrollEnd')} ms | ${ms.reduce((a, m) => a + m.errors, 0)} |`);
}
