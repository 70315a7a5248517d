import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

/** Tests run on the TypeScript sources; test/packaging checks the built dist. */
export const alias = [
  { find: /^@pixhook\/core\/testing$/, replacement: src('core/src/testing.ts') },
  { find: /^@pixhook\/core\/node$/, replacement: src('core/src/node.ts') },
  { find: /^@pixhook\/core$/, replacement: src('core/src/index.ts') },
  { find: /^@pixhook\/(express|fastify|koa|fetch|redis)$/, replacement: src('$1/src/index.ts') },
];

export default defineConfig({
  resolve: { alias },
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', 'test/slow/**', 'packages/*/test/slow/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    typecheck: {
      enabled: true,
      include: ['packages/*/src/**/*.test-d.ts', 'packages/*/test/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
  },
});
