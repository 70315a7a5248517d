#!/usr/bin/env node
// `pnpm release`: the release dry run. Builds the packages if their dist is stale (scripts/ensure-built.mjs),
// packs every public workspace package with `pnpm pack` — as `pnpm publish` would: `workspace:^`
// becomes a real range and .pnpmfile.cjs drops the `@pixhook/source` export condition — into
// ./tarballs, and checks each tarball:
//   - publint (strict: warnings fail too), on the unpacked files;
//   - @arethetypeswrong/cli, its default (strict) profile as in test/packaging.test.ts: node10,
//     node16 from CJS and from ESM, bundler — every package is an ESM+CJS dual with types;
//   - it holds package.json, README.md, CHANGELOG.md and LICENSE, and no src/ or test files;
//   - its dependencies on other @pixhook packages are semver ranges that the workspace's
//     versions satisfy (no `workspace:`), and no export condition points at the sources.
// Then it prints what `changeset publish` would publish (name@version, from the tarballs) and one
// verdict line per tarball. It never publishes. Exit code 1 on any problem.
//
//   pnpm release                    build if needed, pack into ./tarballs, check
//   pnpm release --out <dir>        pack into <dir> instead (its old *.tgz files are removed first)
//   pnpm release --no-pack          check the tarballs already in the output directory
//   pnpm release --offline          do not ask the registry which versions are already published
//
// A real release (see .changeset/README.md), from a clean main:
//   pnpm changeset version    apply the pending changesets: versions and CHANGELOG.md entries
//   pnpm install              refresh the lockfile; commit all of it
//   pnpm release              this dry run, on the new versions
//   pnpm changeset publish    publish (pnpm publish) every public package whose version is not on
//                             the registry yet, and tag it; then `git push --follow-tags`
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pnpmCommand, run as runProgram } from '@pixhook/test-helpers/build-state';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(join(ROOT, 'package.json'));

const REQUIRED_FILES = ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'];
/** Paths that must never be published: sources, tests, build leftovers. */
const FORBIDDEN_FILE =
  /(^|\/)(src|test|tests|__tests__|fixtures)\/|\.(test|spec|test-d)\.[cm]?[jt]sx?$|\.tsbuildinfo$|(^|\/)tsconfig[^/]*\.json$/;
const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies'];

// ---------------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const options = { out: join(ROOT, 'tarballs'), pack: true, registry: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--out') {
      const value = argv[++i];
      if (!value) fail('pixhook: --out needs a directory, e.g. `pnpm release --out /tmp/tarballs`.');
      options.out = resolve(value);
    } else if (arg.startsWith('--out=')) options.out = resolve(arg.slice('--out='.length));
    else if (arg === '--no-pack') options.pack = false;
    else if (arg === '--offline') options.registry = false;
    else if (arg === '--help' || arg === '-h') {
      console.log(
        readFileSync(fileURLToPath(import.meta.url), 'utf8')
          .split('\nimport ')[0]
          .replace(/^#!.*\n/, '')
          .replace(/^\/\/ ?/gm, ''),
      );
      process.exit(0);
    } else fail(`pixhook: unknown option ${arg}; see \`pnpm release --help\`.`);
  }
  return options;
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// Running things

/** `run` from the repository root unless told otherwise. */
const run = (command, args, options = {}) => runProgram(command, args, { cwd: ROOT, ...options });

/** Runs `work` on every item, at most `limit` at a time, keeping the order of the results. */
async function mapLimited(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index], index);
    }
  });
  await Promise.all(lanes);
  return results;
}

// ---------------------------------------------------------------------------------------------
// Workspace, packing, unpacking

/** Every workspace package, from pnpm itself (what changesets and `pnpm -r publish` see). */
async function workspacePackages(pnpm) {
  const [command, prefix] = pnpm;
  const result = await run(command, [...prefix, 'ls', '-r', '--depth', '-1', '--json']);
  if (result.code !== 0)
    fail(`pixhook: \`pnpm ls -r\` failed, so the workspace's packages are unknown:\n${result.stderr}`);
  const listed = JSON.parse(result.stdout.slice(result.stdout.indexOf('[')));
  return listed
    .filter((pkg) => resolve(pkg.path) !== resolve(ROOT))
    .map((pkg) => ({ ...pkg, manifest: JSON.parse(readFileSync(join(pkg.path, 'package.json'), 'utf8')) }));
}

async function pack(pnpm, pkg, out) {
  const [command, prefix] = pnpm;
  const result = await run(command, [...prefix, 'pack', '--json', '--pack-destination', out], { cwd: pkg.path });
  if (result.code !== 0) {
    return { error: `pnpm pack failed in ${relative(ROOT, pkg.path)}: ${(result.stderr + result.stdout).trim()}` };
  }
  const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{')));
  return { tarball: report.filename };
}

function tarList(tarball) {
  const listed = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`tar cannot read ${tarball}: ${listed.stderr.trim()}`);
  return listed.stdout
    .split('\n')
    .filter((line) => line && !line.endsWith('/'))
    .map((line) => line.replace(/^package\//, ''));
}

function unpack(tarball, into) {
  mkdirSync(into, { recursive: true });
  const result = spawnSync('tar', ['-xzf', tarball, '-C', into, '--strip-components=1'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tar cannot unpack ${tarball}: ${result.stderr.trim()}`);
}

// ---------------------------------------------------------------------------------------------
// Checks of one tarball

function checkFiles(files) {
  const problems = [];
  for (const file of REQUIRED_FILES) {
    if (!files.includes(file)) problems.push(`${file} is missing`);
  }
  const forbidden = files.filter((file) => FORBIDDEN_FILE.test(file));
  if (forbidden.length > 0) problems.push(`holds sources or tests: ${forbidden.slice(0, 5).join(', ')}`);
  return problems;
}

const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/** `^1.2.3`, `~1.2.3` or `1.2.3`, satisfied by the workspace's version `1.2.3`. */
function rangeProblem(name, range, workspaceVersion) {
  if (/^(workspace|link|file|portal|catalog):/.test(range)) return `${name}: "${range}" is not a registry range`;
  const match = /^([\^~]?)(.+)$/.exec(range);
  if (!match || !EXACT_VERSION.test(match[2])) return `${name}: "${range}" is not a plain semver range`;
  if (workspaceVersion !== undefined && match[2] !== workspaceVersion) {
    return `${name}: "${range}" does not start at the workspace's ${workspaceVersion}`;
  }
  return undefined;
}

function checkManifest(manifest, workspaceVersions) {
  const problems = [];
  for (const field of DEPENDENCY_FIELDS) {
    for (const [name, range] of Object.entries(manifest[field] ?? {})) {
      if (typeof range === 'string' && range.startsWith('workspace:')) {
        problems.push(`${field}.${name} is "${range}"`);
      } else if (workspaceVersions.has(name) && field !== 'devDependencies') {
        const problem = rangeProblem(name, range, workspaceVersions.get(name));
        if (problem) problems.push(`${field}.${problem}`);
      }
    }
  }
  const exportsText = JSON.stringify(manifest.exports ?? {});
  if (exportsText.includes('@pixhook/source') || /"\.\/src\//.test(exportsText)) {
    problems.push('exports still name the sources (the @pixhook/source condition or ./src/)');
  }
  if (manifest.private) problems.push('is private');
  if (manifest.tsup !== undefined) problems.push('still carries the build-only "tsup" field');
  return problems;
}

async function checkPublint(dir) {
  const { publint } = await import('publint');
  const { formatMessage } = await import('publint/utils');
  // The unpacked tarball holds exactly the published files, so publint needs no packing of its own.
  const { messages, pkg } = await publint({ pkgDir: dir, pack: false, level: 'warning', strict: true });
  return messages.map((message) => `publint ${message.type}: ${formatMessage(message, pkg, { color: false })}`);
}

function attwCommand() {
  const manifestPath = require.resolve('@arethetypeswrong/cli/package.json');
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8'));
  return join(dirname(manifestPath), typeof bin === 'string' ? bin : bin.attw);
}

async function checkAttw(tarball, scratch) {
  // The default profile is the strict one (node10, node16 CJS and ESM, bundler), as in the tests.
  const result = await run(process.execPath, [attwCommand(), tarball, '--format', 'json'], {
    cwd: scratch,
    timeoutMs: 120_000,
  });
  let report = {};
  try {
    const json = result.stdout.indexOf('{');
    if (json !== -1) report = JSON.parse(result.stdout.slice(json));
  } catch {
    // reported below from the exit code
  }
  const problems = Object.values(report.problems ?? {})
    .flat()
    .map(
      (problem) => `attw: ${problem.kind} at ${problem.entrypoint} (${problem.resolutionKind ?? 'every resolution'})`,
    );
  if (result.code !== 0) {
    return problems.length > 0 ? problems : [`attw exited ${result.code}: ${result.stderr.trim().slice(0, 400)}`];
  }
  if (report.problems === undefined) return ['attw found no type declarations in the package'];
  return [];
}

/** What the registry has of name@version: 'published', 'absent', or 'unknown' (not reached). */
async function registryState(name, version) {
  const result = await run('npm', ['view', `${name}@${version}`, 'version', '--json'], { timeoutMs: 20_000 });
  if (result.code === 0) return result.stdout.includes(version) ? 'published' : 'absent';
  return /E404|404 Not Found/.test(result.stdout + result.stderr) ? 'absent' : 'unknown';
}

const formatSize = (bytes) =>
  bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} kB` : `${(bytes / 1048576).toFixed(2)} MB`;

// ---------------------------------------------------------------------------------------------

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const pnpm = pnpmCommand();
  const all = await workspacePackages(pnpm);
  const publicPackages = all.filter((pkg) => !pkg.private && !pkg.manifest.private);
  const workspaceVersions = new Map(all.map((pkg) => [pkg.name, pkg.manifest.version]));
  const skipped = all.filter((pkg) => pkg.private || pkg.manifest.private).map((pkg) => pkg.name);
  console.log(
    `pixhook: ${publicPackages.length} public packages; private, never published: ${skipped.join(', ') || 'none'}`,
  );

  const failures = [];
  let tarballs;
  if (options.pack) {
    const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'ensure-built.mjs')], { stdio: 'inherit' });
    if (built.status !== 0) fail('pixhook: the build failed (scripts/ensure-built.mjs); nothing was packed.');
    mkdirSync(options.out, { recursive: true });
    for (const file of readdirSync(options.out)) {
      if (file.endsWith('.tgz')) rmSync(join(options.out, file));
    }
    const packed = await mapLimited(publicPackages, 4, (pkg) => pack(pnpm, pkg, options.out));
    tarballs = [];
    packed.forEach((result, i) => {
      if (result.error) failures.push({ name: publicPackages[i].name, problems: [result.error] });
      else tarballs.push(result.tarball);
    });
  } else {
    if (!existsSync(options.out)) fail(`pixhook: ${options.out} does not exist; run \`pnpm release\` to pack first.`);
    tarballs = readdirSync(options.out)
      .filter((file) => file.endsWith('.tgz'))
      .map((file) => join(options.out, file));
  }

  const scratch = mkdtempSync(join(tmpdir(), 'pixhook-release-'));
  const lanes = Math.max(1, Math.min(3, availableParallelism() - 1));
  const checked = await mapLimited(tarballs, lanes, async (tarball, i) => {
    const dir = join(scratch, String(i));
    let manifest = {};
    const problems = [];
    let files = [];
    try {
      files = tarList(tarball);
      unpack(tarball, dir);
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      problems.push(...checkFiles(files), ...checkManifest(manifest, workspaceVersions));
      const [lint, types] = await Promise.all([checkPublint(dir), checkAttw(tarball, scratch)]);
      problems.push(...lint, ...types);
    } catch (error) {
      problems.push(error.message);
    }
    return { tarball, name: manifest.name ?? tarball, version: manifest.version, files, problems };
  });
  rmSync(scratch, { recursive: true, force: true });

  // Every public package has exactly one tarball, and nothing else was packed.
  const byName = new Map(checked.map((result) => [result.name, result]));
  for (const pkg of publicPackages) {
    if (!byName.has(pkg.name) && !failures.some((failure) => failure.name === pkg.name)) {
      failures.push({ name: pkg.name, problems: [`no tarball in ${relative(ROOT, options.out) || '.'}`] });
    }
  }
  for (const result of checked) {
    const pkg = publicPackages.find((candidate) => candidate.name === result.name);
    if (!pkg) result.problems.push('is not a public package of this workspace');
    else if (result.version !== pkg.manifest.version) {
      result.problems.push(`version ${result.version} is not the workspace's ${pkg.manifest.version} (stale tarball?)`);
    }
  }

  const states = options.registry
    ? await mapLimited(checked, 4, (result) =>
        result.version ? registryState(result.name, result.version) : Promise.resolve('unknown'),
      )
    : checked.map(() => 'not asked');
  const pending = existsSync(join(ROOT, '.changeset'))
    ? readdirSync(join(ROOT, '.changeset')).filter((file) => file.endsWith('.md') && file !== 'README.md')
    : [];

  console.log('\nWhat `pnpm changeset publish` would publish (tag latest, access public):');
  checked.forEach((result, i) => {
    const state = states[i];
    const note =
      state === 'published'
        ? 'already on the registry: skipped'
        : state === 'absent'
          ? 'not on the registry yet: published'
          : state === 'not asked'
            ? 'published unless the registry has it (not asked: --offline)'
            : 'published unless the registry has it (registry not reached)';
    console.log(`  ${result.name}@${result.version ?? '?'}  ${note}`);
  });
  if (pending.length > 0) {
    console.log(
      `  (${pending.length} pending changeset${pending.length === 1 ? '' : 's'} in .changeset/: \`pnpm changeset version\` applies them first and changes these versions; \`pnpm changeset status\` shows the plan)`,
    );
  }

  console.log('\nTarballs:');
  for (const result of checked) {
    const size = existsSync(result.tarball) ? formatSize(statSync(result.tarball).size) : '?';
    const where = relative(process.cwd(), result.tarball);
    if (result.problems.length === 0) {
      console.log(`  ok    ${where}  (${result.files.length} files, ${size}): publint, attw, files, ranges`);
    } else {
      console.log(`  FAIL  ${where}: ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}`);
      for (const problem of result.problems) console.log(`          - ${problem}`);
    }
  }
  for (const failure of failures) {
    console.log(`  FAIL  ${failure.name}:`);
    for (const problem of failure.problems) console.log(`          - ${problem}`);
  }

  const bad = checked.filter((result) => result.problems.length > 0).length + failures.length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (bad > 0) {
    console.error(
      `\npixhook: release dry run failed: ${bad} of ${publicPackages.length} packages have problems (${seconds} s). Nothing was published.`,
    );
    process.exitCode = 1;
  } else {
    console.log(
      `\npixhook: release dry run passed: ${checked.length} tarballs in ${relative(process.cwd(), options.out) || '.'} (${seconds} s). Nothing was published.`,
    );
  }
}

await main();
