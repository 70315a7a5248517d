// The architecture check (`pnpm lint:architecture`, .dependency-cruiser.cjs) catches what it is there
// for: a scratch tree shaped like the repository gets one violation of each kind, and the check must
// name each; the repository itself must pass it.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', '.bin', 'depcruise');

function depcruise(cwd: string, targets: string[]): { status: number | null; output: string } {
  const run = spawnSync(DEPCRUISE, [...targets, '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Files of the scratch tree: path → source. */
const TREE: Record<string, string> = {
  // An upward import: protocol may not import the pipeline.
  'packages/core/src/protocol/verify.ts':
    "import { resolve } from '../pipeline/options.js';\nexport const v = resolve;\n",
  'packages/core/src/pipeline/options.ts': 'export const resolve = 1;\n',
  // A circle inside one layer.
  'packages/core/src/modes/run-once.ts': "import { q } from './queued.js';\nexport const r = q;\n",
  'packages/core/src/modes/queued.ts': "import { r } from './run-once.js';\nexport const q = () => r;\n",
  // A layer importing the public files.
  'packages/core/src/seams/store.ts': "import { W } from '../webhooks.js';\nexport const s = W;\n",
  'packages/core/src/webhooks.ts': 'export const W = 1;\n',
  // An engine reaching into an adapter's folder by a relative path.
  'packages/redis/src/redis-store.ts': "import { m } from '../../express/src/middleware.js';\nexport const x = m;\n",
  'packages/express/src/middleware.ts': 'export const m = 1;\n',
  // A clean file: imports down only.
  'packages/core/src/pipeline/pipeline.ts': "import { resolve } from './options.js';\nexport const p = resolve;\n",
  'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' } }),
};

describe('the architecture check', () => {
  let scratch: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'pixhook-architecture-'));
    for (const [path, source] of Object.entries(TREE)) {
      mkdirSync(dirname(join(scratch, path)), { recursive: true });
      writeFileSync(join(scratch, path), source);
    }
    copyFileSync(join(ROOT, '.dependency-cruiser.cjs'), join(scratch, '.dependency-cruiser.cjs'));
  });

  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  it('names an upward import, a circle, a layer importing the public files and a relative path into another package', () => {
    const { status, output } = depcruise(scratch, ['packages']);
    expect(status, output).not.toBe(0);
    expect(output).toMatch(
      /core-protocol-imports-down: packages\/core\/src\/protocol\/verify\.ts → packages\/core\/src\/pipeline\/options\.ts/,
    );
    expect(output).toMatch(/no-circular: packages\/core\/src\/modes\/(run-once|queued)\.ts/);
    expect(output).toMatch(
      /core-layers-below-the-public-files: packages\/core\/src\/seams\/store\.ts → packages\/core\/src\/webhooks\.ts/,
    );
    expect(output).toMatch(
      /packages-meet-through-their-names: packages\/redis\/src\/redis-store\.ts → packages\/express\/src\/middleware\.ts/,
    );
    expect(output).toMatch(
      /on-core-imports-core-only: packages\/redis\/src\/redis-store\.ts → packages\/express\/src\/middleware\.ts/,
    );
    // The import that runs down is not reported.
    expect(output).not.toMatch(/pipeline\/pipeline\.ts →/);
  });

  it('passes on the repository', () => {
    const { status, output } = depcruise(ROOT, ['packages', 'test', 'examples', 'bench/src', 'scripts']);
    expect(output).toMatch(/no dependency violations found/);
    expect(status, output).toBe(0);
  });
});
