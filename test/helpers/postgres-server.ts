/**
 * Starts and stops a real Postgres cluster on 127.0.0.1 at a free port, for tests: `initdb` into a
 * temporary directory, then `pg_ctl start`, trust authentication, user `postgres`.
 *
 * Postgres refuses to run as root: as root, every Postgres binary runs as the unprivileged user
 * `postgres` (Debian's package creates it; set PIXHOOK_PG_USER for another) through `runuser`.
 *
 * The binaries are found in PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (Debian), else
 * `pg_config --bindir`, else the PATH. When none is found: under CI (CI=true) importing this module
 * throws, so the run fails loudly; elsewhere the Postgres suites are skipped with the reason printed
 * once.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { clusterDirectory, postgresUnavailable, runPostgresTool } from './postgres-binaries.mjs';
import { describeIfAvailable } from './unavailable.js';

/** Why Postgres tests cannot run here, or undefined when they can. */
export { postgresUnavailable };

/** `describe`, or `describe.skip` when no Postgres can run here (never under CI: that throws). */
export const describeWithPostgres = describeIfAvailable(
  'the Postgres test suites (@pixhook/postgres, @pixhook/pg-boss, examples/postgres)',
  postgresUnavailable,
  'install Postgres (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) or set PG_BIN=/path/to/postgres/bin',
);

/** A Postgres cluster the test controls. */
export interface PostgresServer {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, no password). */
  readonly url: string;
  /**
   * Stops the server: `fast` (a clean shutdown: open sessions are ended, their transactions rolled
   * back) or `immediate` (as on a crash: recovery on the next start). Waits until it is down.
   */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port with the same data. */
  start(): Promise<void>;
  /** Freezes every Postgres process (SIGSTOP): connections stay open and nothing is answered. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  /** Stops it for good and removes its data directory. */
  close(): Promise<void>;
}

/** Every process of the cluster: the postmaster and its children, found by the postmaster's pid. */
function clusterPids(dataDir: string): number[] {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return [];
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(postmaster) || postmaster <= 0) return [];
  // Its children, by their parent pid in /proc (no pgrep: minimal images lack procps).
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fourth field, after the command name in parentheses (which may hold spaces).
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) children.push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return [postmaster, ...children];
}

/**
 * Creates a cluster in a temporary directory and starts it on a free loopback port; resolves once
 * it accepts connections. `fsync` is off: a test cluster needs no durability across a power cut, and
 * `stop('immediate')` still loses nothing committed (the OS keeps what Postgres wrote).
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  if (postgresUnavailable) throw new Error(`Postgres is unavailable: ${postgresUnavailable}`);
  const port = await freePort();
  const { dir, dataDir } = clusterDirectory('pixhook-pg-');
  await runPostgresTool('initdb', [
    '-D',
    dataDir,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
    '--no-locale',
  ]);
  const serverOptions = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses='127.0.0.1'",
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
  ].join(' ');

  const start = async () => {
    await runPostgresTool('pg_ctl', [
      '-D',
      dataDir,
      '-o',
      serverOptions,
      '-l',
      join(dir, 'log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    if (!existsSync(join(dataDir, 'postmaster.pid'))) return;
    for (const pid of clusterPids(dataDir)) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
    await runPostgresTool('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  const signal = (name: NodeJS.Signals) => {
    for (const pid of clusterPids(dataDir)) {
      try {
        process.kill(pid, name);
      } catch {}
    }
  };

  await start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    close: async () => {
      try {
        await stop('immediate');
      } finally {
        if (statSync(dir, { throwIfNoEntry: false })) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
