// Starts `skade serve` on free ports and resolves once its REST port (which serves the console)
// listens: { child, port }. Rejects, the process killed, when it exits first or says nothing
// within `timeoutMs`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

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
