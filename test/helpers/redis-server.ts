/**
 * Starts and stops a real `redis-server` on 127.0.0.1 at a free port, for tests.
 *
 * When the binary is missing: under CI (CI=true) importing this module throws, so the run fails
 * loudly; elsewhere the Redis suites are skipped with the reason printed once.
 * Set REDIS_SERVER to use a binary that is not on the PATH.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { describeIfAvailable } from './unavailable.js';

const BINARY = process.env.REDIS_SERVER || 'redis-server';

function probe(): string | undefined {
  const result = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (result.error)
    return `${BINARY} could not be run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`;
  if (result.status !== 0) return `${BINARY} --version exited with ${result.status}`;
  return undefined;
}

/** Why Redis tests cannot run here, or undefined when they can. */
export const redisUnavailable = probe();

/** `describe`, or `describe.skip` when no redis-server can run here (never under CI: that throws). */
export const describeWithRedis = describeIfAvailable(
  'the Redis test suites (@pixhook/redis, @pixhook/bullmq, the CLI dead letters)',
  redisUnavailable,
  'install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_SERVER=/path/to/redis-server',
);

/** A redis-server process the test controls. */
export interface RedisServer {
  readonly port: number;
  /** Stops the server (SIGTERM: a clean shutdown; SIGKILL: a crash) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered, as on a stalled host. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  /** Starts it again on the same port (and, if persistent, the same data). */
  start(): Promise<void>;
  /** Stops it for good and removes its data directory. */
  close(): Promise<void>;
}

export interface RedisServerOptions {
  /** Keep data across restarts with an append-only file fsynced on every write. @default false */
  persistent?: boolean;
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

async function waitForPing(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${output()}`);
    if (await pingOnce(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${output()}`);
}

/**
 * Starts `redis-server --port N --bind 127.0.0.1 --save '' --appendonly no` (or with an fsynced
 * append-only file when `persistent`) and resolves once it answers PING.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pixhook-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
  args.push(...(options.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  let child: ChildProcess | undefined;

  const start = async () => {
    let output = '';
    const proc = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2_000);
    });
    proc.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2_000);
    });
    await waitForPing(port, proc, () => output);
  };

  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill(signal);
      // A paused server takes the signal once it runs again.
      proc.kill('SIGCONT');
    });
  };

  await start();
  return {
    port,
    start,
    stop,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    close: async () => {
      child?.kill('SIGCONT');
      await stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
