import { defineConfig } from 'tsup';

// Two builds into one dist: the library (ESM + CJS with types) and the `pixhook` bin (ESM with a
// shebang). Each cleans only its own files, because tsup runs them side by side.
export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    clean: ['!cli.*'],
    target: 'node20',
    sourcemap: true,
  },
  {
    entry: ['src/cli.ts'],
    format: ['esm'],
    clean: ['!index.*'],
    target: 'node20',
    sourcemap: true,
    banner: { js: '#!/usr/bin/env node' },
  },
]);
