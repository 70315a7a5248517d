/**
 * Bun and workerd are not dependencies of the workspace (about 270 MB that every `pnpm install`
 * would download): the runtime tests install them on first use with scripts/install-runtimes.mjs,
 * pinned there, into node_modules/.cache/pixhook-runtimes. .ci/run installs them up front.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The workspace root: the nearest directory above this file with pnpm-workspace.yaml. */
function workspaceRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('pixhook: no pnpm-workspace.yaml above the runtime test helpers.');
    dir = parent;
  }
  return dir;
}

export type RuntimesResult = { dir: string; error?: undefined } | { dir?: undefined; error: string };

let pending: Promise<RuntimesResult> | undefined;

/**
 * Runs scripts/install-runtimes.mjs (which does nothing when the runtimes are in place) and
 * resolves with the directory holding their node_modules, or the reason they are missing.
 */
export function installRuntimes(): Promise<RuntimesResult> {
  pending ??= new Promise<RuntimesResult>((resolve) => {
    const script = join(workspaceRoot(), 'scripts', 'install-runtimes.mjs');
    const child = spawn(process.execPath, [script, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    child.on('error', (error) => resolve({ error: `pixhook: could not run ${script}: ${error.message}` }));
    child.on('close', (code) => {
      try {
        const report = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { dir?: string; error?: string };
        if (typeof report.dir === 'string') resolve({ dir: report.dir });
        else resolve({ error: report.error ?? `pixhook: ${script} exited ${code}` });
      } catch {
        resolve({ error: `pixhook: ${script} exited ${code}: ${stderr.trim().slice(-500)}` });
      }
    });
  });
  return pending;
}

/** CI (the CI environment variable, as .ci/run sets it) must run every runtime suite. */
const inCi = (): boolean => !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

/**
 * What a runtime suite does when its runtime is missing: in CI it fails (throws, so the test file
 * fails with the reason); elsewhere it is skipped, saying why. Returns the line to show.
 */
export function runtimeMissing(suite: string, reason: string): string {
  const message = `pixhook: the ${suite} cannot run: ${reason.replace(/^pixhook: /, '')}`;
  if (inCi()) throw new Error(`${message} (CI runs every runtime suite; outside CI it is skipped)`);
  console.warn(`${message}; skipped (in CI this fails)`);
  return message;
}
