// Bundles the console (src/main.ts and its CSS, uPlot included) with esbuild into the folder
// given as the first argument (default: web/dist): assets/ with content-hashed names, and
// index.html naming them. No inline script or style, so the pages run under a strict CSP.
import * as esbuild from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, 'dist'));
mkdirSync(out, { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: join(here, 'src', 'main.ts') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  outdir: out,
  entryNames: 'assets/[name]-[hash]',
  assetNames: 'assets/[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => relative(out, resolve(p)));
const script = outputs.find((p) => p.endsWith('.js'));
const style = outputs.find((p) => p.endsWith('.css'));
if (!script || !style) throw new Error(`esbuild produced no script or style: ${outputs.join(', ')}`);
// Absolute names: index.html is answered at both /ui and /ui/, where relative ones would differ.
const html = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('{{SCRIPT}}', `/ui/${script}`)
  .replace('{{STYLE}}', `/ui/${style}`);
writeFileSync(join(out, 'index.html'), html);
console.log(`web console: ${[script, style, 'index.html'].join(', ')} in ${out}`);
