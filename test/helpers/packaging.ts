import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  discoverPackages,
  type Manifest,
  pnpmCommand,
  type RunResult,
  run as runProgram,
  type WorkspacePackage,
} from './build-state.mjs';

export {
  discoverPackages,
  type Manifest,
  type RunResult,
  staleBuild,
  type WorkspacePackage,
} from './build-state.mjs';

/** A package packed and unpacked into the scratch project. */
export interface InstalledPackage {
  tarball: string;
  /** `<scratch>/node_modules/<name>`: exactly the files of the tarball. */
  dir: string;
  /** Paths inside the tarball, without the leading `package/`. */
  files: string[];
}

/** The subpaths a package exports (`.`, `./testing`, `./package.json`…); wildcards cannot be listed, so they throw. */
export function exportedSubpaths(manifest: Manifest): string[] {
  const { exports } = manifest;
  if (exports === undefined) return ['.'];
  if (typeof exports === 'string' || !Object.keys(exports).some((key) => key.startsWith('.'))) return ['.'];
  const keys = Object.keys(exports);
  const wildcard = keys.find((key) => key.includes('*'));
  if (wildcard) throw new Error(`${manifest.name}: exports "${wildcard}" is a pattern; list its files in the test.`);
  return keys;
}

/** `@pixhook/core` + `./testing` → `@pixhook/core/testing`. */
export const specifier = (name: string, subpath: string): string =>
  subpath === '.' ? name : `${name}/${subpath.slice(2)}`;

/** `run` with the packaging tests' default deadline (30 s). */
export const run = (
  command: string,
  args: string[],
  options: { cwd: string; timeoutMs?: number },
): Promise<RunResult> => runProgram(command, args, { timeoutMs: 30_000, ...options });

/** Packs a package with pnpm (so `files` and `workspace:` rewriting apply as on publish). */
async function pack(pkg: WorkspacePackage, destination: string): Promise<{ tarball: string; files: string[] }> {
  const [command, prefix] = pnpmCommand();
  const result = await run(command, [...prefix, 'pack', '--json', '--pack-destination', destination], {
    cwd: pkg.dir,
  });
  if (result.code === null && /\bENOENT\b/.test(result.stderr)) {
    throw new Error('pnpm is not on PATH: run the tests with `pnpm test` (or `npx -y pnpm@10 test`).');
  }
  if (result.code !== 0) throw new Error(`pnpm pack failed in ${pkg.dir}:\n${result.stderr}${result.stdout}`);
  const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as {
    filename: string;
    files: { path: string }[];
  };
  return { tarball: report.filename, files: report.files.map((file) => file.path) };
}

function unpack(tarball: string, into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  return new Promise((resolve, reject) =>
    execFile('tar', ['-xzf', tarball, '-C', into, '--strip-components=1'], (error) =>
      error ? reject(error) : resolve(),
    ),
  );
}

function link(target: string, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path, 'dir');
}

/**
 * Packs every package and unpacks it into `<scratch>/node_modules/<name>`, so that plain `node`
 * in `scratch` resolves them from their published files only. Third-party dependencies are linked
 * from the workspace's install (no network); peer dependencies too when the workspace has them.
 */
export async function installPacked(
  packages: WorkspacePackage[],
  root: string,
  scratch: string,
): Promise<Map<string, InstalledPackage>> {
  const names = new Set(packages.map((pkg) => pkg.name));
  const installed = new Map<string, InstalledPackage>();
  await Promise.all(
    packages.map(async (pkg) => {
      const { tarball, files } = await pack(pkg, join(scratch, 'tarballs'));
      const dir = join(scratch, 'node_modules', pkg.name);
      await unpack(tarball, dir);
      installed.set(pkg.name, { tarball, dir, files });

      const required = { ...pkg.manifest.dependencies, ...pkg.manifest.optionalDependencies };
      for (const dep of Object.keys({ ...required, ...pkg.manifest.peerDependencies })) {
        if (names.has(dep)) continue;
        const source = [join(pkg.dir, 'node_modules', dep), join(root, 'node_modules', dep)].find((path) =>
          existsSync(path),
        );
        if (source) link(realpathSync(source), join(dir, 'node_modules', dep));
        else if (dep in required)
          throw new Error(`${pkg.name} depends on ${dep}, which is not installed: run pnpm install.`);
      }
    }),
  );
  return installed;
}

/**
 * `npm install`s exactly `tarballs` (our packed packages) into a new project `dir`, as a user does,
 * but offline and with an empty cache: every third-party dependency the given packages name is
 * packed from the workspace's install first, so npm gets nothing from a registry, and a dependency
 * on a package that is not among the tarballs fails as it would for a user (E404, here ENOTCACHED).
 */
export async function npmInstallOffline(
  dir: string,
  tarballs: string[],
  packages: WorkspacePackage[],
  root: string,
): Promise<RunResult> {
  mkdirSync(join(dir, 'vendor'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'npm-install-check', private: true })}\n`);
  const ours = new Set(discoverPackages(root).map((pkg) => pkg.name));
  const vendored: string[] = [];
  for (const pkg of packages) {
    for (const dep of Object.keys(pkg.manifest.dependencies ?? {})) {
      if (ours.has(dep)) continue;
      const source = [join(pkg.dir, 'node_modules', dep), join(root, 'node_modules', dep)].find((path) =>
        existsSync(path),
      );
      if (!source) throw new Error(`${pkg.name} depends on ${dep}, which is not installed: run pnpm install.`);
      const packed = await run(
        'npm',
        [
          'pack',
          withoutScripts(realpathSync(source), join(dir, 'sources', dep)),
          '--pack-destination',
          'vendor',
          '--json',
        ],
        {
          cwd: dir,
        },
      );
      if (packed.code !== 0) throw new Error(`npm pack ${dep} failed:\n${packed.stderr}`);
      const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
      vendored.push(`./vendor/${filename}`);
    }
  }
  const args = ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(dir, '.npm-cache')];
  return run('npm', [...args, ...tarballs, ...vendored], { cwd: dir, timeoutMs: 120_000 });
}

/**
 * A copy of the installed package at `source`, in `copy`, without its `scripts`: `npm pack` of a
 * folder runs its `prepare` script whatever `--ignore-scripts` says (lru-cache's builds it with
 * tshy, which is not installed), and npm 11 crashes on it. What is packed is the installed files,
 * which are what the registry's tarball held.
 */
function withoutScripts(source: string, copy: string): string {
  cpSync(source, copy, {
    recursive: true,
    dereference: true,
    filter: (path) => !path.includes('/node_modules/', source.length),
  });
  const manifestPath = join(copy, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { scripts?: unknown };
  delete manifest.scripts;
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return copy;
}

/** The attw command line of the workspace's @arethetypeswrong/cli. */
export function attwCommand(root: string): [string, string[]] {
  const require = createRequire(join(root, 'package.json'));
  const manifestPath = require.resolve('@arethetypeswrong/cli/package.json');
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const file = typeof bin === 'string' ? bin : (bin.attw as string);
  return [process.execPath, [join(dirname(manifestPath), file)]];
}
