#!/usr/bin/env node
// Installs the JavaScript runtimes that only @pixhook/fetch's runtime tests need — Bun (the npm
// `bun` package) and workerd (through `miniflare`) — into node_modules/.cache/pixhook-runtimes,
// outside the workspace's dependencies: together they are about 270 MB, which `pnpm install` no
// longer downloads for everyone. Pinned to exact versions; a second run with them in place does
// nothing.
//
//   node scripts/install-runtimes.mjs          install if missing; prints where they are
//   node scripts/install-runtimes.mjs --json   the same, as one JSON line on stdout:
//                                              { "dir", "installed", "seconds" } or { "error" }
//
// .ci/run calls it in its install step, `pnpm test:runtimes` before its tests, and
// packages/fetch/test/helpers/runtimes.ts when the Bun or workerd tests start (those run only under
// `pnpm test:runtimes`: `pnpm test` downloads nothing). Several callers at once are fine: one
// installs, the others wait.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { run } from '@pixhook/test-helpers/build-state';

/** The versions the runtime tests were written against (they were devDependencies of @pixhook/fetch). */
export const RUNTIMES = { bun: '1.4.5', miniflare: '4.20260426.0' };

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = Object.entries(RUNTIMES)
  .map(([name, version]) => `${name}@${version}`)
  .join('+');
/** One directory per set of versions, so changing a version installs beside the old one. */
export const RUNTIMES_DIR = join(ROOT, 'node_modules', '.cache', 'pixhook-runtimes', KEY);
const DONE = join(RUNTIMES_DIR, '.installed');
const LOCK = `${RUNTIMES_DIR}.lock`;
const INSTALL_TIMEOUT_MS = 10 * 60_000;

function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(RUNTIMES_DIR, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

function isInstalled() {
  return existsSync(DONE) && Object.entries(RUNTIMES).every(([name, version]) => installedVersion(name) === version);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function lockIsStale() {
  try {
    const pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
    process.kill(pid, 0);
    return Date.now() - statSync(LOCK).mtimeMs > INSTALL_TIMEOUT_MS + 60_000;
  } catch (error) {
    // ESRCH: its owner is gone. No pid file yet: the owner is between mkdir and write, unless old.
    if (error.code === 'ESRCH') return true;
    if (error.code === 'EPERM') return false;
    return existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > 30_000;
  }
}

/** Holds a directory lock while `work` runs; waits for another process's install to end. */
async function withLock(work) {
  mkdirSync(dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      if (lockIsStale()) rmSync(LOCK, { recursive: true, force: true });
      else await sleep(500);
    }
  }
  try {
    writeFileSync(join(LOCK, 'pid'), String(process.pid));
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function npmInstall() {
  const args = [
    'install',
    '--no-save',
    '--no-package-lock',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    '--prefix',
    RUNTIMES_DIR,
    ...Object.entries(RUNTIMES).map(([name, version]) => `${name}@${version}`),
  ];
  // On Windows npm is a .cmd script, which only a shell runs.
  const windows = process.platform === 'win32';
  return run(windows ? 'npm.cmd' : 'npm', args, {
    cwd: RUNTIMES_DIR,
    timeoutMs: INSTALL_TIMEOUT_MS,
    shell: windows,
  }).then(({ code, stdout, stderr }) => {
    const output = `${stdout}${stderr}`;
    return { ok: code === 0, output: code === 0 ? output : `${output}(npm exited ${code ?? 'without a code'})` };
  });
}

/**
 * Installs the runtimes unless they are in place. Resolves with their directory, whether this call
 * installed them and how long it took; rejects with an error a person can act on.
 */
export async function ensureRuntimes() {
  if (isInstalled()) return { dir: RUNTIMES_DIR, installed: false, seconds: 0 };
  const started = Date.now();
  return withLock(async () => {
    // Another process may have finished while this one waited for the lock.
    if (isInstalled()) return { dir: RUNTIMES_DIR, installed: false, seconds: 0 };
    rmSync(RUNTIMES_DIR, { recursive: true, force: true });
    mkdirSync(RUNTIMES_DIR, { recursive: true });
    const { ok, output } = await npmInstall();
    const wanted = Object.entries(RUNTIMES)
      .map(([name, version]) => `${name}@${version}`)
      .join(' ');
    if (!ok || !Object.entries(RUNTIMES).every(([name, version]) => installedVersion(name) === version)) {
      // npm's first error lines say what failed (code, the request, the reason); skip its stack dump.
      const tail = output
        .split('\n')
        .filter((line) => line.trim() !== '' && !/Unknown (user|env) config/.test(line))
        .filter((line) => !/^npm error\s+(at |[\w]+: |[{}]|$)/.test(line))
        .slice(0, 6)
        .join('\n');
      throw new Error(
        `pixhook: could not install ${wanted} into ${RUNTIMES_DIR} with npm; the Bun and workerd tests of @pixhook/fetch need them, so check the network and the npm registry, then run \`node scripts/install-runtimes.mjs\` again.\n${tail}`,
      );
    }
    writeFileSync(DONE, `${new Date().toISOString()}\n`);
    return { dir: RUNTIMES_DIR, installed: true, seconds: Math.round((Date.now() - started) / 100) / 10 };
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const json = process.argv.includes('--json');
  try {
    const result = await ensureRuntimes();
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else if (result.installed)
      console.log(`pixhook: installed the test runtimes in ${result.seconds} s: ${result.dir}`);
    else console.log(`pixhook: the test runtimes are already installed: ${result.dir}`);
  } catch (error) {
    if (json) process.stdout.write(`${JSON.stringify({ error: error.message })}\n`);
    else console.error(error.message);
    process.exitCode = 1;
  }
}
