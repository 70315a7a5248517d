/**
 * The fetch handler as a Cloudflare Worker under real workerd (the binary from the npm `workerd`
 * package, run by `miniflare`), reached over HTTP on 127.0.0.1. Without the `nodejs_compat` flag
 * workerd has no `process` and no `node:crypto`: signatures are checked on Web Crypto.
 */
import { fileURLToPath } from 'node:url';
import type { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET } from '../../../test/helpers/deliveries.js';
import { bundle } from './helpers/bundle.js';
import { RUNTIME_MAX_BODY_BYTES, type RuntimeApp, representativeRows, runtimeClient } from './helpers/runtime-rows.js';
import { findWorkerd } from './helpers/workerd-binary.js';

const workerd = findWorkerd();
if (workerd.path === undefined) console.warn(`[skip] workerd suite: ${workerd.reason}`);

const CONFIGS = [
  { name: 'Web Crypto (no Node compatibility)', flags: [] as string[], nodeCrypto: false },
  { name: 'nodejs_compat', flags: ['nodejs_compat'], nodeCrypto: true },
];

describe.skipIf(workerd.path === undefined).each(CONFIGS)(
  'fetch handler as a Worker in workerd: $name',
  ({ flags, nodeCrypto }) => {
    let mf: Miniflare | undefined;
    let app: RuntimeApp;

    beforeAll(async () => {
      const { code } = await bundle(fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url)), 'neutral');
      const { Miniflare } = await import('miniflare');
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
