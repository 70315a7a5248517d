/**
 * The fetch handler under real Bun (the binary from the npm `bun` package), as `Bun.serve`'s
 * `fetch`, reached over HTTP on 127.0.0.1. Bun is not a dependency: it is installed on first use
 * (helpers/runtimes.ts); when it cannot be, the suite fails in CI and is skipped elsewhere, saying why.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECRET } from '@pixhook/test-helpers/deliveries';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBun } from './helpers/bun-binary.js';
import { bundle } from './helpers/bundle.js';
import { RUNTIME_MAX_BODY_BYTES, type RuntimeApp, representativeRows, runtimeClient } from './helpers/runtime-rows.js';
import { runtimeMissing } from './helpers/runtimes.js';

const bun = await findBun();
const title =
  bun.path === undefined
    ? `fetch handler under Bun (${runtimeMissing('Bun suite', bun.reason)})`
    : `fetch handler under Bun ${bun.version}`;

describe.skipIf(bun.path === undefined)(title, () => {
  let child: ChildProcess | undefined;
  let dir: string | undefined;
  let app: RuntimeApp;

  beforeAll(async () => {
    const { code } = await bundle(fileURLToPath(new URL('./fixtures/bun-server.ts', import.meta.url)), 'neutral');
    dir = mkdtempSync(join(tmpdir(), 'pixhook-bun-'));
    const entry = join(dir, 'server.mjs');
    writeFileSync(entry, code);
    const proc = spawn(bun.path as string, [entry], {
      env: { PATH: process.env.PATH, SIGNING_SECRET: SECRET, MAX_BODY_BYTES: String(RUNTIME_MAX_BODY_BYTES) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      let err = '';
      proc.stdout?.on('data', (chunk: Buffer) => {
        out += chunk;
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve((JSON.parse(line) as { port: number }).port);
      });
      proc.stderr?.on('data', (chunk: Buffer) => {
        err += chunk;
      });
      proc.on('exit', (code) => reject(new Error(`bun exited (${code}) before listening: ${err}`)));
    });
    app = runtimeClient(port);
  });

  afterAll(() => {
    child?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs in Bun, which has node:crypto (the synchronous path)', async () => {
    expect((await app.state()).nodeCrypto).toBe(true);
  });

  representativeRows(() => app);
});
