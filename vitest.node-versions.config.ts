import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The tests that prove a Node version (.ci/run runs them on Node 22 and 24; `pnpm test` runs
 * everything on Node 20): the contract table, the packaging checks (packed tarballs loaded by
 * plain `node`, which must be the Node under test: put it first on PATH) and every adapter's tests.
 * Not the runtime tests of @pixhook/fetch (Bun, workerd, the bundle), which test other runtimes.
 * Type tests and coverage are Node-independent and stay with the Node 20 run.
 */
const include = [
  'test/contract.test.ts',
  'test/packaging.test.ts',
  // Every Node adapter against the same socket behaviour, which Node's http may change between versions.
  'test/{answered-elsewhere,body-deadline,idle-bodies,keep-alive}.test.ts',
  'packages/{express,fastify,koa,fetch,nestjs,lambda}/test/**/*.test.ts',
  // Queued mode over every adapter, on a real Redis.
  'packages/bullmq/test/**/*.test.ts',
  // Transactional handlers and the pg-boss queue over every adapter, on a real Postgres.
  'packages/postgres/test/**/*.test.ts',
  'packages/pg-boss/test/**/*.test.ts',
];
const runtimeTests = ['packages/fetch/test/{bun,workerd,bundle}.test.ts'];

const merged = mergeConfig(
  base,
  defineConfig({ test: { typecheck: { enabled: false }, coverage: { enabled: false } } }),
);

// mergeConfig concatenates arrays: the file lists are set here, not added to the default ones.
export default defineConfig({
  ...merged,
  test: { ...merged.test, include, exclude: [...(base.test?.exclude ?? []), ...runtimeTests] },
});
