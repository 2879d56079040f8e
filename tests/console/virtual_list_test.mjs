// The console's virtualised lists in a real browser (Debian's chromium, headless, playwright-core
// as in browser_test.mjs): a lake of 2,000 tables and a table of 3,000 snapshots, made as metadata
// by bench/console_lake.py and served by `skade serve`. The overview's tree scrolled to its end
// shows the last table, with its numbers, and holds far fewer rows than the lake has; so does the
// table page's snapshot timeline, whose last row is the oldest snapshot, which previews its rows
// when its id is clicked, and whose preview chooser offers older snapshots a page at a time. A table
// of a few thousand data files (bench/skade_gen_table, registered) lists them a page at a time from
// the server as its file list scrolls: the end of the list shows the last files, every file once,
// after one request per page. No console errors.
// Screenshots go to --out. Without chromium it skips (exit 77), saying why.
//   node virtual_list_test.mjs --skade BUILD/src/skade --out DIR [--gen-table BUILD/bench/skade_gen_table]
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { arg, chromiumArgs, chromiumPath, repoRoot as root, requireChromium, skadeBinary, startServe } from './harness.mjs';

const skadeBin = skadeBinary();
const out = resolve(arg('--out', join(root, 'build', 'tests', 'console_artifacts')));
const TABLES = 2000;
const SNAPSHOTS = 3000;
const FILES = 2500;
const genTable = resolve(arg('--gen-table', join(dirname(dirname(skadeBin)), 'bench', 'skade_gen_table')));

const chromium = requireChromium();

let failed = 0;
const check = (ok, what) => {
  if (!ok) failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
};

mkdirSync(out, { recursive: true });
const work = mkdtempSync(join(tmpdir(), 'skade-console-virtual-'));
const lake = join(work, 'lake');
let child = null;
let browser = null;
try {
  const made = spawnSync('python3', [join(root, 'bench', 'console_lake.py'), '--skade', skadeBin, '--warehouse', lake,
    '--tables', String(TABLES), '--snapshots', String(SNAPSHOTS)], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`console_lake.py: ${made.stderr}${made.stdout}`);
  // A table of FILES data files over 5 manifests (one row each, partitioned), registered in the lake
  // as many.files (in the warehouse: serve reads nothing outside it).
  const filesTable = join(lake, 'generated_files');
  const generated = spawnSync(genTable, ['--out', filesTable, '--rows', String(FILES), '--files', String(FILES), '--manifests', '5',
    '--columns', '6', '--partition', 'identity', '--threads', '2'], { encoding: 'utf8' });
  if (generated.status !== 0) throw new Error(`skade_gen_table: ${generated.stderr}${generated.stdout}${generated.error ?? ''}`);
  for (const command of [['ns', 'create', 'many'], ['register', 'many.files', filesTable]]) {
    const ran = spawnSync(skadeBin, ['--warehouse', lake, '-q', ...command], { encoding: 'utf8' });
    if (ran.status !== 0) throw new Error(`skade ${command[0]}: ${ran.stderr}${ran.stdout}`);
  }
  let port;
  ({ child, port } = await startServe(skadeBin, ['--warehouse', lake, '-q', 'serve', '--flight-port', '0', '--rest-port', '0']));
  const origin = `http://127.0.0.1:${port}`;
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));

  // The overview: 2,000 tables (and bench.history) in one namespace, many.files in another.
  await page.goto(`${origin}/ui/#/`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  const counts = await page.textContent('#counts');
  check(counts === `2 namespaces, ${(TABLES + 2).toLocaleString('en-US')} tables`, `the overview counts every table (${counts})`);
  const first = await page.locator('#tree-rows a[data-table]').first().textContent();
  check(first === 'history', `the tree starts with the namespace's first table (${first})`);
  const last = `bench.t${String(TABLES - 1).padStart(5, '0')}`;
  check((await page.locator(`a[data-table="${last}"]`).count()) === 0, 'the last table is not drawn before scrolling');
  await page.$eval('#tree', (v) => v.scrollTo(0, v.scrollHeight));
  await page.waitForSelector(`a[data-table="${last}"]`, { timeout: 10_000 });
  const waited = Date.now();
  await page.waitForFunction((name) => {
    const cells = document.querySelector(`a[data-table="${name}"]`)?.closest('tr')?.cells;
    return cells && cells[1].textContent === '1,000';
  }, last, { timeout: 10_000 });
  console.log(`(the last table's numbers after ${Date.now() - waited} ms)`);
  const lastRow = await page.$eval(`a[data-table="${last}"]`, (a) => Array.from(a.closest('tr').cells).map((c) => c.textContent));
  check(JSON.stringify(lastRow.slice(1, 5)) === JSON.stringify(['1,000', lastRow[2], '1', '1']),
    `after scrolling to the end the last table shows with its numbers (${JSON.stringify(lastRow)})`);
  const treeRows = await page.locator('#tree-rows tr.vrow').count();
  check(treeRows > 0 && treeRows < 200, `the tree's DOM holds ${treeRows} of ${TABLES + 2} rows`);
  // Halfway: the rows there are the tables there, in order.
  await page.$eval('#tree', (v) => v.scrollTo(0, v.scrollHeight / 2));
  await page.waitForFunction(() => {
    const drawn = Array.from(document.querySelectorAll('#tree-rows tr.vrow'));
    return drawn.length && Math.abs(Number(drawn[0].dataset.index) - 1000) < 100 && !drawn.some((r) => r.classList.contains('loading'));
  }, null, { timeout: 10_000 });
  const middle = await page.$$eval('#tree-rows a[data-table]', (as) => as.map((a) => a.textContent));
  const sorted = middle.length > 10 && middle.every((n, i) => i === 0 || Number(n.slice(1)) === Number(middle[i - 1].slice(1)) + 1);
  check(sorted && Math.abs(Number(middle[0].slice(1)) - TABLES / 2) < 100, `halfway down the tree shows consecutive tables near the middle (${middle[0]}…${middle[middle.length - 1]})`);
  await page.screenshot({ path: join(out, 'virtual-overview.png') });

  // The table page: 3,000 snapshots, newest first.
  await page.goto(`${origin}/ui/#/table/${encodeURIComponent(JSON.stringify(['bench', 'history']))}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  check((await page.textContent('main')).includes(`Snapshots (${SNAPSHOTS.toLocaleString('en-US')})`), 'the table page counts every snapshot');
  await page.$eval('#snapshots-view', (v) => v.scrollTo(0, v.scrollHeight));
  // The oldest snapshot console_lake.py wrote has the first of its ids.
  await page.waitForSelector('#snapshots li[data-snapshot="1000000000"]', { timeout: 10_000 });
  const lastSnapshot = await page.$$eval('#snapshots li[data-snapshot]', (lis) => lis[lis.length - 1].dataset.snapshot);
  check(lastSnapshot === '1000000000', `after scrolling to the end the last row is the oldest snapshot (${lastSnapshot})`);
  const snapshotRows = await page.locator('#snapshots li.vrow').count();
  check(snapshotRows > 0 && snapshotRows < 200, `the timeline's DOM holds ${snapshotRows} of ${SNAPSHOTS} rows`);
  await page.screenshot({ path: join(out, 'virtual-table.png') });
  // Its id previews the rows at that snapshot, though the chooser offers only the newest.
  await page.click('#snapshots li[data-snapshot="1000000000"] button.sid');
  await page.waitForFunction(() => document.querySelector('#preview-snapshot')?.value === '1000000000' &&
    document.querySelector('#preview')?.dataset.loading === 'false', null, { timeout: 15_000 });
  const previewRows = await page.locator('#preview-rows tbody tr').count();
  check(previewRows === 50, `the oldest snapshot's id shows its rows in the preview (${previewRows} of a page of 50)`);
  // The chooser offers the newest 500 and then older pages of them, down to the oldest.
  const offered = async () => page.$$eval('#preview-snapshot option', (os) => os.length);
  const before = await offered();
  for (let i = 0; i < 10 && !(await page.isDisabled('#preview-older')); i++) {
    const had = await offered();
    await page.click('#preview-older');
    // The page arrived: more options, and the button ready again unless every snapshot is offered.
    await page.waitForFunction(([n, all]) => {
      const count = document.querySelectorAll('#preview-snapshot option').length;
      return count > n && (!document.querySelector('#preview-older')?.disabled || count >= all);
    }, [had, SNAPSHOTS], { timeout: 10_000 });
  }
  const options = await page.$$eval('#preview-snapshot option', (os) => os.map((o) => o.value));
  check(before <= 502 && options.length === SNAPSHOTS && new Set(options).size === SNAPSHOTS &&
    (await page.textContent('#preview-offered')) === `${SNAPSHOTS.toLocaleString('en-US')} of ${SNAPSHOTS.toLocaleString('en-US')} snapshots offered`,
    `the preview's chooser offers ${before} snapshots, then every one of the ${SNAPSHOTS} a page at a time (${options.length})`);

  // The file list of a table of FILES files, paged by the server as it scrolls.
  const fileRequests = [];
  page.on('request', (r) => r.url().includes('/console/v1/files?') && fileRequests.push(r.url()));
  await page.goto(`${origin}/ui/#/table/${encodeURIComponent(JSON.stringify(['many', 'files']))}`);
  await page.waitForSelector('#data-files tbody tr[data-path]', { timeout: 30_000 });
  const summary = await page.textContent('#files-summary');
  check(summary.startsWith(`${FILES.toLocaleString('en-US')} data files, 0 delete files`), `the file list counts every file (${summary})`);
  const firstRequests = fileRequests.length;
  const seen = new Set();
  const collect = async () => {
    for (const p of await page.$$eval('#data-files tbody tr[data-path]', (rows) => rows.map((r) => r.dataset.path))) seen.add(p);
  };
  await collect();
  // Scrolled a screen at a time to the end, every row drawn is a file once loaded.
  for (let step = 0; step < 400; step++) {
    const atEnd = await page.$eval('#data-files-view', (v) => {
      v.scrollBy(0, v.clientHeight);
      return v.scrollTop + v.clientHeight >= v.scrollHeight - 1;
    });
    // Drawn again for the new position (the list redraws on the next frame), every row loaded.
    await page.waitForFunction((files) => {
      const v = document.querySelector('#data-files-view');
      const rows = Array.from(document.querySelectorAll('#data-files tbody tr.vrow'));
      const lastDrawn = Number(rows[rows.length - 1]?.dataset.index ?? -1);
      return lastDrawn >= Math.min(files - 1, Math.floor((v.scrollTop + v.clientHeight) / 28) - 2) &&
        !document.querySelector('#data-files tbody tr.vrow.muted');
    }, FILES, { timeout: 10_000 });
    await collect();
    if (atEnd) break;
  }
  const lastIndex = await page.$$eval('#data-files tbody tr[data-path]', (rows) => Number(rows[rows.length - 1].dataset.index));
  const drawnFiles = await page.locator('#data-files tbody tr.vrow').count();
  check(lastIndex === FILES - 1 && seen.size === FILES && drawnFiles < 200,
    `scrolled to its end the file list has shown all ${FILES} files once (${seen.size}, last row ${lastIndex}), holding ${drawnFiles} rows`);
  check(firstRequests <= 2 && fileRequests.length <= Math.ceil(FILES / 200) + 1,
    `the files came a page at a time (${firstRequests} requests at first, ${fileRequests.length} in all)`);
  await page.$eval('#data-files-view', (v) => v.scrollIntoView());
  await page.screenshot({ path: join(out, 'virtual-files.png') });
  check(problems.length === 0, `no console errors ${problems.join(' | ')}`);
} catch (e) {
  failed++;
  console.log(`FAIL ${e.stack ?? e}`);
} finally {
  await browser?.close();
  child?.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
