import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `pnpm test:runtimes`: @pixhook/fetch under the other JavaScript runtimes, real Bun and workerd
 * (Cloudflare Workers' runtime, through miniflare). They are not dependencies: the first run installs
 * them (about 270 MB, scripts/install-runtimes.mjs, into node_modules/.cache/pixhook-runtimes), so
 * they stay out of `pnpm test`, which downloads nothing. CI (.ci/run) runs this too.
 */
export const runtimeTests = ['packages/fetch/test/bun.test.ts', 'packages/fetch/test/workerd.test.ts'];

const merged = mergeConfig(
  base,
  defineConfig({ test: { typecheck: { enabled: false }, coverage: { enabled: false } } }),
);

// mergeConfig concatenates arrays: the file list is set here, not added to the default one.
export default defineConfig({
  ...merged,
  test: { ...merged.test, include: runtimeTests, exclude: ['**/node_modules/**', '**/dist/**'] },
});
