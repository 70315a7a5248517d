// NestJS 11, the previous major: the packed @pixhook/nestjs, @pixhook/fastify and @pixhook/core (as
// npm installs them) in a scratch project whose @nestjs/* are Nest 11 (test/nest11 installs them),
// loaded from CommonJS as a Nest 11 app compiled by tsc is. The app sends itself deliveries on each
// platform and reports the answers.
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { discoverPackages, installPacked, run } from '@pixhook/test-helpers/packaging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const NEST11 = join(ROOT, 'test/nest11/node_modules');
const scratch = mkdtempSync(join(tmpdir(), 'pixhook-nest11-'));

beforeAll(async () => {
  const packages = discoverPackages(ROOT).filter((pkg) =>
    ['@pixhook/core', '@pixhook/fastify', '@pixhook/nestjs'].includes(pkg.name),
  );
  await installPacked(packages, ROOT, scratch);
  // installPacked linked the workspace's Nest (12) as @pixhook/nestjs's peers: Nest 11 instead,
  // at the top of the scratch project, where the app and @pixhook/nestjs both find it.
  rmSync(join(scratch, 'node_modules/@pixhook/nestjs/node_modules'), { recursive: true, force: true });
  for (const name of [
    '@nestjs/common',
    '@nestjs/core',
    '@nestjs/platform-express',
    '@nestjs/platform-fastify',
    'reflect-metadata',
    'rxjs',
  ]) {
    const path = join(scratch, 'node_modules', name);
    mkdirSync(dirname(path), { recursive: true });
    symlinkSync(realpathSync(join(NEST11, name)), path, 'dir');
  }
  copyFileSync(fileURLToPath(new URL('fixtures/nest-app.cjs', import.meta.url)), join(scratch, 'nest-app.cjs'));
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.each(['express', 'fastify'])('@pixhook/nestjs on NestJS 11, %s platform', (platform) => {
  it('verifies, de-duplicates and dispatches to a provider, and leaves the other routes JSON', async () => {
    const result = await run(process.execPath, ['nest-app.cjs', platform], { cwd: scratch, timeoutMs: 30_000 });
    expect(result.stderr).toBe('');
    const report = JSON.parse(result.stdout) as {
      nest: string;
      answers: { status: number; body: string }[];
      runs: string[];
    };
    expect(report.nest).toMatch(/^11\./);
    expect(report.answers.map((answer) => answer.status)).toEqual([200, 200, 400, 201]);
    expect(report.answers[2]?.body).toContain('SIGNATURE_MISMATCH');
    expect(JSON.parse(report.answers[3]?.body ?? '')).toEqual({ received: { name: 'a' } });
    expect(report.runs).toEqual(['created img_11 object', 'any image.created']);
  });
});
