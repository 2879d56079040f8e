// What the console's browser tests and bench/console_bench.mjs share: their command line, Debian's
// chromium driven by playwright-core (from web/node_modules), its launch flags, and `skade serve`
// started on free ports.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The value after `name` on the command line, else `fallback`.
export const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};

// --skade, else the build's binary.
export const skadeBinary = () => resolve(arg('--skade', join(repoRoot, 'build', 'src', 'skade')));

export const chromiumPath = process.env.SKADE_CHROMIUM ?? '/usr/bin/chromium';

// Headless chromium without the background traffic a first run starts.
export const chromiumArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// playwright-core's chromium. Without chromium a test skips (exit 77, saying why) and a
// benchmark (`whenMissing` 'throw') fails; without playwright-core both fail.
export function requireChromium(whenMissing = 'skip') {
  if (!existsSync(chromiumPath)) {
    if (whenMissing === 'throw') throw new Error(`no chromium at ${chromiumPath}`);
    console.log(`SKIP: no chromium at ${chromiumPath} (scripts/setup.sh installs Debian's chromium); the browser test did not run`);
    process.exit(77);
  }
  try {
    return createRequire(join(repoRoot, 'web', 'package.json'))('playwright-core').chromium;
  } catch (e) {
    console.log(`FAIL: playwright-core is not installed in web/node_modules (run scripts/setup.sh): ${e.message}`);
    process.exit(1);
  }
}

// Starts `skade serve` on free ports and resolves once its REST port (which serves the console)
// listens: { child, port }. Rejects, the process killed, when it exits first or says nothing
// within `timeoutMs`.
export async function startServe(skadeBin, args, timeoutMs = 30_000) {
  const child = spawn(skadeBin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`skade serve did not start within ${timeoutMs / 1000} s`)), timeoutMs);
    lines.on('line', (line) => {
      const m = /^rest catalog listening on http:\/\/[^:]+:(\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    });
    child.on('exit', (code) => fail(new Error(`skade serve exited with ${code}`)));
  }).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
  return { child, port };
}
