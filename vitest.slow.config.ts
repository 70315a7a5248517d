import { defineConfig } from 'vitest/config';
import { resolveSources } from './vitest.config.js';

/** Load and fault runs: slower, run by `pnpm test:slow` (and by CI) apart from `pnpm test`. */
export default defineConfig({
  ...resolveSources,
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    include: ['test/slow/**/*.test.ts', 'packages/*/test/slow/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
