// Starts a throwaway Postgres cluster on a free 127.0.0.1 port, when its binaries are installed:
// `initdb` into a temporary directory, then `pg_ctl start`, trust authentication, user `postgres`.
// The bench's plain-JavaScript counterpart of test/helpers/postgres-server.ts (same binary lookup,
// same `runuser` as root: Postgres refuses to run as root), with two differences: the whole cluster
// is pinned to one core (taskset on pg_ctl: the postmaster and every backend it forks inherit it),
// and it keeps Postgres' durability defaults (fsync, synchronous_commit and full_page_writes on),
// as a production database has them: every commit waits for its WAL flush.
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinnedCommand } from '../pin.mjs';
import { clockTicks, freePort, treeCpu } from './proc.mjs';

/** The directory of initdb, pg_ctl and postgres: PG_BIN, Debian's newest, `pg_config --bindir`, or the PATH's. */
function findBinDir() {
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

const AS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const RUN_AS = process.env.PIXHOOK_PG_USER || 'postgres';

/** The uid and gid of the user the cluster runs as, when running as root. */
function runAsIds() {
  const uid = spawnSync('id', ['-u', RUN_AS], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', RUN_AS], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why no cluster can run here, or undefined when one can. */
function unavailable(binDir) {
  if (!binDir) return 'no Postgres binaries found (initdb, pg_ctl)';
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(binDir, tool))) return `${join(binDir, tool)} is missing`;
  }
  if (AS_ROOT && !runAsIds()) return `running as root, and there is no user ${RUN_AS} to run Postgres as`;
  return undefined;
}

/** The command line of a Postgres binary: as RUN_AS when root, pinned to `core` when given. */
function commandLine(binDir, tool, args, core) {
  const binary = join(binDir, tool);
  const [command, argv] = AS_ROOT ? ['runuser', ['-u', RUN_AS, '--', binary, ...args]] : [binary, args];
  return core === undefined ? [command, argv] : pinnedCommand(core, command, argv);
}

/** Runs a Postgres binary; resolves with its output, rejects when it fails. */
function runTool(binDir, tool, args, core) {
  const [command, argv] = commandLine(binDir, tool, args, core);
  return new Promise((resolve, reject) => {
    execFile(command, argv, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${tool} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

/**
 * `{ url, port, version, settings, cpu, stop }`, or `{ skipped: reason, missing: true }` when
 * Postgres is not installed (the caller fails the run under CI). Throws when it is installed but
 * does not start.
 */
export async function startPostgres({ core }) {
  const binDir = findBinDir();
  const missing = unavailable(binDir);
  if (missing) {
    return {
      missing: true,
      skipped: `${missing} (apt-get install postgresql, or set PG_BIN=/path/to/postgres/bin): Postgres rows skipped`,
    };
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pixhook-bench-pg-'));
  const dataDir = join(dir, 'data');
  if (AS_ROOT) {
    const { uid, gid } = runAsIds();
    chownSync(dir, uid, gid);
  }
  // Stops the cluster and removes its files, synchronously: also on the way out of a run that fails.
  const stopSync = () => {
    if (existsSync(join(dataDir, 'postmaster.pid'))) {
      const [command, argv] = commandLine(binDir, 'pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      spawnSync(command, argv, { stdio: 'ignore', timeout: 60_000 });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const onExit = () => stopSync();
  const onSignal = (signal) => {
    stopSync();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const forget = () => {
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  // Room for every bench pool (20 connections per Postgres server) and the bench's own.
  const settings = { listen_addresses: '127.0.0.1', max_connections: 200 };
  const options = [`-p ${port}`, `-k ${dir}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
  try {
    await runTool(binDir, 'initdb', [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-locale',
      // Only initdb's own files are not flushed: the running cluster keeps fsync on.
      '--no-sync',
    ]);
    // Pinned from the start: the postmaster, its background processes and every backend inherit it.
    await runTool(
      binDir,
      'pg_ctl',
      ['-D', dataDir, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'],
      core,
    );
  } catch (error) {
    stopSync();
    forget();
    throw error;
  }
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const version =
    spawnSync(join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.match(/\d+(\.\d+)+/)?.[0] ??
    'unknown';
  const ticks = clockTicks();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    version,
    settings,
    /** The cluster's CPU time so far in µs: postmaster, background processes and backends, exited ones included. */
    cpu: () => treeCpu(postmaster, ticks),
    stop: async () => {
      try {
        if (existsSync(join(dataDir, 'postmaster.pid'))) {
          await runTool(binDir, 'pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
        }
      } finally {
        stopSync();
        forget();
      }
    },
  };
}
