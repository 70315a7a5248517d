// Builds the dashboard's page into dist/dashboard: the Preact app bundled by esbuild (one
// app.js, no CDN and no request outside the dashboard's own server), its stylesheet and
// index.html copied beside it, where the server (dist/index.js) reads them. The package's build
// runs it after tsup, which cleans dist first.
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const source = fileURLToPath(new URL('../src/web/', import.meta.url));
const out = fileURLToPath(new URL('../dist/dashboard/', import.meta.url));

mkdirSync(out, { recursive: true });
await build({
  entryPoints: [`${source}main.tsx`],
  outfile: `${out}app.js`,
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  target: ['chrome111', 'firefox115', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'eof',
  logLevel: 'warning',
});
for (const file of ['index.html', 'styles.css']) copyFileSync(`${source}${file}`, `${out}${file}`);
