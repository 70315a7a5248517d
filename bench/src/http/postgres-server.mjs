// Starts a throwaway Postgres cluster on a free 127.0.0.1 port, when its binaries are installed:
// `initdb` into a temporary directory, then `pg_ctl start`, trust authentication, user `postgres`.
// The bench's counterpart of test/helpers/postgres-server.ts, on the same binary lookup and `runuser`
// as root (@pixhook/test-helpers/postgres-binaries: Postgres refuses to run as root), with two
// differences: the whole cluster
// is pinned to one core (taskset on pg_ctl: the postmaster and every backend it forks inherit it),
// and it keeps Postgres' durability defaults (fsync, synchronous_commit and full_page_writes on),
// as a production database has them: every commit waits for its WAL flush.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  clusterDirectory,
  postgresBinDir,
  postgresCommand,
  postgresUnavailable,
  runPostgresTool,
} from '@pixhook/test-helpers/postgres-binaries';
import { pinnedCommand } from '../pin.mjs';
import { clockTicks, freePort, treeCpu } from './proc.mjs';

/**
 * `{ url, port, version, settings, cpu, stop }`, or `{ skipped: reason, missing: true }` when
 * Postgres is not installed (the caller fails the run under CI). Throws when it is installed but
 * does not start.
 */
export async function startPostgres({ core }) {
  const missing = postgresUnavailable;
  if (missing) {
    return {
      missing: true,
      skipped: `${missing} (apt-get install postgresql, or set PG_BIN=/path/to/postgres/bin): Postgres rows skipped`,
    };
  }
  const port = await freePort();
  const { dir, dataDir } = clusterDirectory('pixhook-bench-pg-');
  // Stops the cluster and removes its files, synchronously: also on the way out of a run that fails.
  const stopSync = () => {
    if (existsSync(join(dataDir, 'postmaster.pid'))) {
      const [command, argv] = postgresCommand('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
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
    await runPostgresTool('initdb', [
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
    await runPostgresTool(
      'pg_ctl',
      ['-D', dataDir, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'],
      core === undefined ? undefined : (command, argv) => pinnedCommand(core, command, argv),
    );
  } catch (error) {
    stopSync();
    forget();
    throw error;
  }
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const version =
    spawnSync(join(postgresBinDir, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.match(/\d+(\.\d+)+/)?.[0] ??
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
          await runPostgresTool('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
        }
      } finally {
        stopSync();
        forget();
      }
    },
  };
}
