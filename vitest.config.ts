import { clientConditions, serverConditions } from '@pixhook/test-helpers/vitest-conditions';
import { defineConfig } from 'vitest/config';

/**
 * Tests run on the TypeScript sources: every package's exports put `@pixhook/source` (src/*.ts)
 * first, and these conditions select it. test/packaging checks the built dist, with plain node.
 */
export const resolveSources = {
  resolve: { conditions: clientConditions },
  ssr: { resolve: { conditions: serverConditions } },
};

/**
 * v8 coverage of every package's src: on in CI (so `pnpm test` reports it there), else with
 * `pnpm test --coverage`; reports in coverage/ (not in git). Core must stay covered: its thresholds
 * sit just under what the suite reached when they were set (statements 97.1 %, branches 95.8 %,
 * functions 94.6 %, lines 97.7 %). The CLI runs as a built binary in child processes and Redis
 * needs a redis-server, so their figures here undercount; they have no threshold.
 */
const coverage = {
  enabled: process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI),
  provider: 'v8' as const,
  include: ['packages/*/src/**/*.ts'],
  exclude: ['packages/*/src/**/*.test.ts', 'packages/*/src/**/*.test-d.ts'],
  reporter: ['text-summary', 'html', 'json-summary'],
  reportsDirectory: './coverage',
  thresholds: {
    'packages/core/src/**/*.ts': { statements: 96, branches: 94, functions: 93, lines: 97 },
  },
};

export default defineConfig({
  ...resolveSources,
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Not here: the load and fault runs (`pnpm test:slow`), and @pixhook/fetch under Bun and workerd
    // (`pnpm test:runtimes`, vitest.runtimes.config.ts), which download those runtimes on first use.
    exclude: [
      '**/node_modules/**',
      '**/dist/**',
      'test/slow/**',
      'packages/*/test/slow/**',
      'packages/fetch/test/bun.test.ts',
      'packages/fetch/test/workerd.test.ts',
    ],
    // Every core: Vitest's default in a run is one fewer, which on CI's 2 cores is one file at a time.
    // Most files wait on servers and timers rather than compute, so two at once take ~105 s instead of ~190 s.
    maxWorkers: '100%',
    testTimeout: 20_000,
    // Hooks start Postgres clusters (initdb), redis-servers and Chromium, or build the CLI when its
    // dist is stale: on 2 busy cores that can take more than a minute.
    hookTimeout: 120_000,
    coverage,
    typecheck: {
      enabled: true,
      include: ['packages/*/src/**/*.test-d.ts', 'packages/*/test/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
  },
});
