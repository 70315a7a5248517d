// `pixhook` run as a user runs it, the built binary of @pixhook/cli: for the CLI's tests and the
// dashboard's (whose `pixhook dashboard` loads @pixhook/dashboard's dist from the workspace).
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SECRET } from './receivers.js';

const BUILD = fileURLToPath(new URL('./build-package.mjs', import.meta.url));

/** The built binary. */
export const CLI = fileURLToPath(new URL('../../packages/cli/dist/cli.js', import.meta.url));

/** The secret every test signs with: the one the receivers of @pixhook/test-helpers/receivers verify with. */
export { SECRET };

/**
 * Builds `pkg` (the CLI, or a package whose tests run it, such as the dashboard) and its workspace
 * dependencies when a dist is missing or stale, under a lock shared by every test file that runs
 * the binary.
 */
export function ensureBuilt(pkg = '@pixhook/cli'): void {
  try {
    execFileSync('flock', ['/tmp/pixhook-cli-build.lock', process.execPath, BUILD, pkg], { stdio: 'inherit' });
  } catch (error) {
    // Without flock (not Linux), build unlocked.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    execFileSync(process.execPath, [BUILD, pkg], { stdio: 'inherit' });
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
  /** Written to stdin, then closed. */
  input?: string | Uint8Array;
  /** More environment variables, e.g. REDIS_URL or DATABASE_URL (which are otherwise left unset). */
  env?: Record<string, string>;
}

function environment(secret: string | null, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.FORCE_COLOR;
  delete env.PIXHOOK_SECRET;
  delete env.REDIS_URL;
  delete env.DATABASE_URL;
  if (secret !== null) env.PIXHOOK_SECRET = secret;
  return { ...env, ...extra };
}

/** Starts `pixhook …` as a child process. */
export function start(args: string[], options: RunOptions = {}) {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: environment(options.secret === undefined ? SECRET : options.secret, options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(options.input);
  return child;
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
