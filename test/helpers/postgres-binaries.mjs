// Where Postgres' binaries are and how to run them, for the tests (postgres-server.ts) and the
// bench (bench/src/http/postgres-server.mjs). Plain JavaScript, so the bench imports it with node.
//
// The binaries are found in PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (Debian), else
// `pg_config --bindir`, else the PATH. Postgres refuses to run as root: as root, every binary runs as
// the unprivileged user `postgres` (Debian's package creates it; PIXHOOK_PG_USER for another)
// through `runuser`, and a cluster's directory is given to that user.
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

export const postgresBinDir = findBinDir();
const AS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const RUN_AS = process.env.PIXHOOK_PG_USER || 'postgres';

/** The uid and gid of the user the cluster runs as, when running as root. */
function runAsIds() {
  const uid = spawnSync('id', ['-u', RUN_AS], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', RUN_AS], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

function probe() {
  if (!postgresBinDir) return 'no Postgres binaries found (initdb, pg_ctl)';
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(postgresBinDir, tool))) return `${join(postgresBinDir, tool)} is missing`;
  }
  if (AS_ROOT && !runAsIds()) return `running as root, and there is no user ${RUN_AS} to run Postgres as`;
  return undefined;
}

export const postgresUnavailable = probe();

export function postgresCommand(tool, args) {
  const binary = join(postgresBinDir ?? '', tool);
  return AS_ROOT ? ['runuser', ['-u', RUN_AS, '--', binary, ...args]] : [binary, args];
}

export function runPostgresTool(tool, args, wrap = (command, argv) => [command, argv]) {
  const [command, argv] = wrap(...postgresCommand(tool, args));
  return new Promise((resolve, reject) => {
    execFile(command, argv, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${tool} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

export function clusterDirectory(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (AS_ROOT) {
    const ids = runAsIds();
    if (ids) chownSync(dir, ids.uid, ids.gid);
  }
  return { dir, dataDir: join(dir, 'data') };
}
