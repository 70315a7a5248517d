import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Manifest, pnpmCommand, type WorkspacePackage } from './build-state.mjs';

export { discoverPackages, type Manifest, staleBuild, type WorkspacePackage } from './build-state.mjs';

/** A package packed and unpacked into the scratch project. */
export interface InstalledPackage {
  tarball: string;
  /** `<scratch>/node_modules/<name>`: exactly the files of the tarball. */
  dir: string;
  /** Paths inside the tarball, without the leading `package/`. */
  files: string[];
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
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

/** Runs a program, never through a shell; resolves with its exit code and output. */
export function run(command: string, args: string[], options: { cwd: string; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    // Nothing from the test runner may change how plain node resolves or loads modules.
    delete env.NODE_OPTIONS;
    delete env.NODE_PATH;
    const child = spawn(command, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Packs a package with pnpm (so `files` and `workspace:` rewriting apply as on publish). */
async function pack(pkg: WorkspacePackage, destination: string): Promise<{ tarball: string; files: string[] }> {
  const [command, prefix] = pnpmCommand();
  const result = await run(command, [...prefix, 'pack', '--json', '--pack-destination', destination], {
    cwd: pkg.dir,
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    throw new Error('pnpm is not on PATH: run the tests with `pnpm test` (or `npx -y pnpm@10 test`).');
  });
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

/** The attw command line of the workspace's @arethetypeswrong/cli. */
export function attwCommand(root: string): [string, string[]] {
  const require = createRequire(join(root, 'package.json'));
  const manifestPath = require.resolve('@arethetypeswrong/cli/package.json');
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const file = typeof bin === 'string' ? bin : (bin.attw as string);
  return [process.execPath, [join(dirname(manifestPath), file)]];
}
