/**
 * The fetch handler as a Cloudflare Worker under real workerd (the binary from the npm `workerd`
 * package, run by `miniflare`), reached over HTTP on 127.0.0.1. Without the `nodejs_compat` flag
 * workerd has no `process` and no `node:crypto`: signatures are checked on Web Crypto. miniflare is
 * not a dependency: it is installed on first use (helpers/runtimes.ts); when it cannot be, the suite
 * fails in CI and is skipped elsewhere, saying why.
 */
import { fileURLToPath } from 'node:url';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from './helpers/bundle.js';
import { RUNTIME_MAX_BODY_BYTES, type RuntimeApp, representativeRows, runtimeClient } from './helpers/runtime-rows.js';
import { runtimeMissing } from './helpers/runtimes.js';
import { findWorkerd, type MiniflareInstance } from './helpers/workerd-binary.js';

const workerd = await findWorkerd();
const Miniflare = workerd.path === undefined ? undefined : workerd.Miniflare;
// Without `$` and `%`, which each() would read as placeholders in the title.
const skipped =
  workerd.path === undefined ? ` (${runtimeMissing('workerd suite', workerd.reason).replace(/[$%]/g, '')})` : '';

const CONFIGS = [
  { name: 'Web Crypto (no Node compatibility)', flags: [] as string[], nodeCrypto: false },
  { name: 'nodejs_compat', flags: ['nodejs_compat'], nodeCrypto: true },
];

describe.skipIf(workerd.path === undefined).each(CONFIGS)(
  `fetch handler as a Worker in workerd: $name${skipped}`,
  ({ flags, nodeCrypto }) => {
    let mf: MiniflareInstance | undefined;
    let app: RuntimeApp;

    beforeAll(async () => {
      const { code } = await bundle(fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url)), 'neutral');
      if (Miniflare === undefined) throw new Error('pixhook: miniflare is not loaded.');
      mf = new Miniflare({
        modules: true,
        script: code,
        compatibilityDate: '2025-09-01',
        compatibilityFlags: flags,
        bindings: { SIGNING_SECRET: SECRET, MAX_BODY_BYTES: String(RUNTIME_MAX_BODY_BYTES) },
        host: '127.0.0.1',
        port: 0,
      });
      const url = await mf.ready;
      app = runtimeClient(Number(url.port));
    });

    afterAll(async () => {
      await mf?.dispose();
    });

    it(nodeCrypto ? 'has node:crypto (the synchronous path)' : 'has no node:crypto (the Web Crypto path)', async () => {
      expect((await app.state()).nodeCrypto).toBe(nodeCrypto);
    });

    representativeRows(() => app);
  },
);
