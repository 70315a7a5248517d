import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECRET } from '@pixhook/test-helpers/receivers';

/**
 * The dashboard's tests start it as a user does, `pixhook dashboard`: the built binary of
 * @pixhook/cli (this package's dependency, found through its name), which loads this package's
 * dist on demand from the workspace's root node_modules.
 */
const cliManifest = createRequire(import.meta.url).resolve('@pixhook/cli/package.json');
const { bin } = JSON.parse(readFileSync(cliManifest, 'utf8')) as { bin: Record<string, string> };
export const CLI = join(dirname(cliManifest), bin.pixhook as string);

const BUILD = fileURLToPath(new URL('./build-dashboard.mjs', import.meta.url));

/** The secret every test signs with, the receivers' own. */
export { SECRET };

/** Builds the CLI and the dashboard when a dist is missing or stale, under the CLI tests' lock. */
export function ensureBuilt(): void {
  try {
    execFileSync('flock', ['/tmp/pixhook-cli-build.lock', process.execPath, BUILD], { stdio: 'inherit' });
  } catch (error) {
    // Without flock (not Linux), build unlocked.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    execFileSync(process.execPath, [BUILD], { stdio: 'inherit' });
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** PIXHOOK_SECRET; `null` leaves it unset. @default SECRET */
  secret?: string | null;
}

function environment(secret: string | null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.FORCE_COLOR;
  delete env.PIXHOOK_SECRET;
  if (secret !== null) env.PIXHOOK_SECRET = secret;
  return env;
}

/** Starts `pixhook …` as a child process. */
export function start(args: string[], options: RunOptions = {}) {
  return spawn(process.execPath, [CLI, ...args], {
    env: environment(options.secret === undefined ? SECRET : options.secret),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `pixhook …` to its end, asynchronously so that receivers in this process can answer it. */
export function run(args: string[], options: RunOptions = {}): Promise<CliResult> {
  const child = start(args, options);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
