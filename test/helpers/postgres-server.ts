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
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeIfAvailable } from './unavailable.js';

function findBinDir(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(join(debian, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(debian, versions[0], 'bin');
  }
  const config = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (config.status === 0 && config.stdout.trim()) return config.stdout.trim();
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return join(which.stdout.trim(), '..');
  return undefined;
}

const BIN_DIR = findBinDir();
const AS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const RUN_AS = process.env.PIXHOOK_PG_USER || 'postgres';

/** The uid and gid of the user the cluster runs as, when running as root. */
function runAsIds(): { uid: number; gid: number } | undefined {
  const result = spawnSync('id', ['-u', RUN_AS], { encoding: 'utf8' });
  const group = spawnSync('id', ['-g', RUN_AS], { encoding: 'utf8' });
  if (result.status !== 0 || group.status !== 0) return undefined;
  return { uid: Number(result.stdout.trim()), gid: Number(group.stdout.trim()) };
}

function probe(): string | undefined {
  if (!BIN_DIR) return 'no Postgres binaries found (initdb, pg_ctl)';
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(BIN_DIR, tool))) return `${join(BIN_DIR, tool)} is missing`;
  }
  if (AS_ROOT && !runAsIds()) return `running as root, and there is no user ${RUN_AS} to run Postgres as`;
  return undefined;
}

/** Why Postgres tests cannot run here, or undefined when they can. */
export const postgresUnavailable = probe();

/** `describe`, or `describe.skip` when no Postgres can run here (never under CI: that throws). */
export const describeWithPostgres = describeIfAvailable(
  'the Postgres test suites (@pixhook/postgres, examples/postgres)',
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a Postgres binary (as RUN_AS when root); resolves with its output, rejects when it fails. */
function runTool(tool: string, args: string[]): Promise<string> {
  const binary = join(BIN_DIR as string, tool);
  const [command, argv] = AS_ROOT ? ['runuser', ['-u', RUN_AS, '--', binary, ...args]] : [binary, args];
  // Asynchronous: a test's own servers keep running while Postgres starts.
  return new Promise((resolve, reject) => {
    execFile(command, argv, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${tool} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout + stderr);
    });
  });
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
  const dir = mkdtempSync(join(tmpdir(), 'pixhook-pg-'));
  const dataDir = join(dir, 'data');
  if (AS_ROOT) {
    const ids = runAsIds() as { uid: number; gid: number };
    chownSync(dir, ids.uid, ids.gid);
  }
  await runTool('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-locale']);
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
    await runTool('pg_ctl', ['-D', dataDir, '-o', serverOptions, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    if (!existsSync(join(dataDir, 'postmaster.pid'))) return;
    for (const pid of clusterPids(dataDir)) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
    await runTool('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
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
