import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig, type Options } from 'tsup';

/**
 * The one build config of every published package: each runs `tsup --config ../../tsup.config.ts`
 * from its own directory. Entry points are not listed here: they come from the package's
 * `exports` (the `@pixhook/source` condition names each entry's source file) and `bin`, so a new
 * entry point is added in one place, package.json. A package's `"tsup"` field may override options
 * (Fastify needs `cjsInterop` for its default export; fetch targets ES2022 for edge runtimes).
 */
interface Manifest {
  exports?: Record<string, string | Record<string, unknown>>;
  bin?: string | Record<string, string>;
  tsup?: Options;
}

const manifest = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as Manifest;

const libraryEntries = Object.values(manifest.exports ?? {})
  .map((target) => (typeof target === 'object' ? target['@pixhook/source'] : undefined))
  .filter((source): source is string => typeof source === 'string');

/** `./dist/cli.js` → `src/cli.ts`: a bin is built from the source file of the same name. */
const binEntries = Object.values(typeof manifest.bin === 'string' ? { bin: manifest.bin } : (manifest.bin ?? {})).map(
  (file) => file.replace(/^\.?\/?dist\//, 'src/').replace(/\.js$/, '.ts'),
);

const shared: Options = { target: 'node20', sourcemap: true, ...manifest.tsup };
const builtNames = (entries: string[]) => entries.map((entry) => `${entry.replace(/^.*\/|\.ts$/g, '')}.*`);

export default defineConfig([
  {
    ...shared,
    entry: libraryEntries,
    format: ['esm', 'cjs'],
    dts: true,
    // Both builds write into dist side by side, so each cleans only what it does not own.
    clean: binEntries.length > 0 ? builtNames(binEntries).map((name) => `!${name}`) : true,
  },
  ...(binEntries.length > 0
    ? [
        {
          ...shared,
          entry: binEntries,
          format: ['esm'] as Options['format'],
          clean: builtNames(libraryEntries).map((name) => `!${name}`),
          banner: { js: '#!/usr/bin/env node' },
        } satisfies Options,
      ]
    : []),
]);
