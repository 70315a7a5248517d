// Whether the built dist of each public package can be trusted, the pnpm to build it with, and
// how the repository's scripts run a program.
// Plain JavaScript so that scripts/ensure-built.mjs (plain node) and the tests share one copy.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** The pnpm major this repository pins (`packageManager`), and the exact version npx fetches otherwise. */
const PNPM_MAJOR = '10.';
const PNPM_FALLBACK = 'pnpm@10.34.9';

/** Every `packages/<dir>/package.json` that is not private, sorted by name. */
export function discoverPackages(root) {
  const found = [];
  for (const entry of readdirSync(join(root, 'packages'), { withFileTypes: true })) {
    const file = join(root, 'packages', entry.name, 'package.json');
    if (!entry.isDirectory() || !existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    if (!manifest.private) found.push({ name: manifest.name, dir: dirname(file), manifest });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** Modification times of the files under `dir` (recursively) that `keep` accepts. */
function times(dir, keep) {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter(keep)
    .map((name) => statSync(join(dir, name)))
    .filter((stat) => stat.isFile())
    .map((stat) => stat.mtimeMs);
}

/**
 * What a package's build reads besides src/: its package.json (exports, bin and the `tsup` field
 * name the entries), its tsconfig, and the tsup config it builds with (its own, else the shared
 * one at the root of the repository).
 */
function buildInputs(pkg) {
  const own = join(pkg.dir, 'tsup.config.ts');
  const config = existsSync(own) ? own : join(pkg.dir, '..', '..', 'tsup.config.ts');
  return [join(pkg.dir, 'package.json'), join(pkg.dir, 'tsconfig.json'), config].filter((file) => existsSync(file));
}

/**
 * Why a package's dist cannot be trusted (missing, or older than a source file, its package.json,
 * tsconfig or tsup config), or undefined.
 */
export function staleBuild(pkg) {
  const dist = join(pkg.dir, 'dist');
  if (!existsSync(dist) || readdirSync(dist).length === 0) return `${pkg.name} has no dist: run \`pnpm build\` first.`;
  const built = Math.min(...times(dist, () => true));
  const sources = existsSync(join(pkg.dir, 'src'))
    ? times(join(pkg.dir, 'src'), (name) => !/\.test(-d)?\.ts$/.test(name))
    : [];
  if (sources.some((time) => time > built)) return `${pkg.name}: dist is older than src; run \`pnpm build\` first.`;
  const newer = buildInputs(pkg).find((file) => statSync(file).mtimeMs > built);
  if (newer) return `${pkg.name}: dist is older than ${relative(pkg.dir, newer)}; run \`pnpm build\` first.`;
  return undefined;
}

/**
 * The pnpm to run, as `[command, leading arguments]`: the one running this process (`pnpm test`
 * sets npm_execpath), else `pnpm` on PATH when it is 10.x, else `npx -y pnpm@10.34.9`.
 */
export function pnpmCommand() {
  const execPath = process.env.npm_execpath;
  if (execPath && /pnpm/.test(execPath) && /\.c?js$/.test(execPath)) return [process.execPath, [execPath]];
  const onPath = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim().startsWith(PNPM_MAJOR)) return ['pnpm', []];
  return ['npx', ['-y', PNPM_FALLBACK]];
}

/**
 * Runs a program without a shell, its output collected; resolves with `{ code, stdout, stderr }`
 * and never rejects: a program that cannot start, or is killed at `timeoutMs`, gives `code: null`
 * and says why in `stderr`. NODE_OPTIONS and NODE_PATH are not passed on (nothing from a test
 * runner may change how the program resolves or loads modules). `shell` only for what needs one
 * (npm.cmd on Windows).
 */
export function run(command, args, { cwd, timeoutMs = 120_000, shell = false } = {}) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.NODE_PATH;
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env, shell, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        const code = typeof error.code === 'number' ? error.code : null;
        const why = code === null ? (error.signal ? `(killed by ${error.signal})` : error.message) : '';
        resolve({ code, stdout, stderr: `${stderr}${why}` });
      },
    );
  });
}
