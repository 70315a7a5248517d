// What a user gets from npm: every public package is packed as for publishing, unpacked into a
// scratch project outside the workspace, and loaded there by plain `node` — import() from ESM and
// require() from CommonJS — then checked with publint and @arethetypeswrong/cli. Runs on the built
// dist: `pnpm test` builds first.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import {
  attwCommand,
  discoverPackages,
  exportedSubpaths,
  type InstalledPackage,
  installPacked,
  npmInstallOffline,
  type RunResult,
  run,
  specifier,
  staleBuild,
} from '@pixhook/test-helpers/packaging';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Named exports each entry point must have, with their `typeof`. `default` alone means the module
 * is that one value: `require()` must return it directly (the Fastify plugin). Packages not listed
 * here are still loaded both ways and must export something, the same from ESM and CJS.
 */
const EXPECTED: Record<string, Record<string, Record<string, string>>> = {
  '@pixhook/core': {
    '.': {
      Webhooks: 'function',
      sign: 'function',
      WebhookVerificationError: 'function',
      isWebhookVerificationError: 'function',
      MemoryStore: 'function',
      EVENT_TYPES: 'object',
      ERROR_STATUS: 'object',
    },
    './testing': { createTestEvent: 'function', createSignedRequest: 'function' },
    './node': { nodeBodyReader: 'function', pathMatcher: 'function', sendAnswer: 'function', failAnswer: 'function' },
  },
  '@pixhook/express': { '.': { webhookMiddleware: 'function' } },
  '@pixhook/fastify': { '.': { default: 'function' } },
  '@pixhook/koa': { '.': { webhookMiddleware: 'function' } },
  '@pixhook/fetch': { '.': { createFetchHandler: 'function' } },
  '@pixhook/redis': { '.': { RedisStore: 'function', RedisArchive: 'function' } },
  '@pixhook/bullmq': { '.': { BullMQQueue: 'function', jobIdFor: 'function' } },
  '@pixhook/pg-boss': { '.': { PgBossQueue: 'function', pgBossJobIdFor: 'function' } },
  '@pixhook/opentelemetry': { '.': { PixhookInstrumentation: 'function' } },
  '@pixhook/cli': {
    '.': {
      deliver: 'function',
      diagnoseSignature: 'function',
      simulateDelivery: 'function',
      retryDelays: 'function',
      secretProblem: 'function',
      receiverUrlProblem: 'function',
    },
    './schedule': { retryDelays: 'function', formatDuration: 'function', RETRY_DELAYS_SECONDS: 'object' },
  },
  '@pixhook/dashboard': { '.': { startDashboard: 'function', DEFAULT_PORT: 'number' } },
  '@pixhook/nestjs': {
    '.': { PixhookModule: 'function', OnWebhook: 'function', OnAnyWebhook: 'function', OnWebhookError: 'function' },
  },
  '@pixhook/lambda': { '.': { createLambdaHandler: 'function' } },
  '@pixhook/postgres': {
    '.': {
      PostgresStore: 'function',
      PostgresTransactions: 'function',
      // Deprecated re-exports of @pixhook/pg-boss's, kept until the next minor.
      PgBossQueue: 'function',
      pgBossJobIdFor: 'function',
      migrate: 'function',
      getMigrationSql: 'function',
      PostgresArchive: 'function',
      migrateArchive: 'function',
      getArchiveMigrationSql: 'function',
    },
  },
};

/**
 * attw rules a package may skip, with the reason. Empty: every package passes the strict profile
 * (node10, node16 from CJS and ESM, bundler). core's subpaths reach node10 users through
 * `typesVersions`; the Fastify plugin's `export =` in index.d.cts is what attw expects for a CJS
 * build whose module.exports is the function.
 */
const ATTW_IGNORED_RULES: Record<string, string[]> = {};

interface ModuleReport {
  resolved?: string;
  kind?: string;
  selfDefault?: boolean;
  name?: string;
  defaultName?: string;
  exports?: Record<string, string>;
  error?: string;
}
interface ProbeReport {
  modules: Record<string, ModuleReport>;
  smoke: { signed?: number; forged?: number; ran?: boolean; error?: string };
}

const packages = discoverPackages(ROOT);
const scratch = mkdtempSync(join(tmpdir(), 'pixhook-packaging-'));
const specifiers = packages.flatMap((pkg) => exportedSubpaths(pkg.manifest).map((sub) => specifier(pkg.name, sub)));

let installed: Map<string, InstalledPackage>;
let esm: ProbeReport;
let cjs: ProbeReport;
const attw = new Map<string, Promise<RunResult>>();
/** More scratch directories to remove at the end. */
const cleanups: string[] = [];

function probe(file: string): Promise<ProbeReport> {
  return run(process.execPath, [file, JSON.stringify(specifiers)], { cwd: scratch }).then((result) => {
    if (result.code !== 0) throw new Error(`node ${file} exited ${result.code}:\n${result.stderr}`);
    return JSON.parse(result.stdout) as ProbeReport;
  });
}

/**
 * Runs `pixhook dashboard --port 0` (`bin` is the installed binary, or a path to run with node)
 * in `cwd` until it prints its address, then checks that it serves its page: index.html, app.js
 * and styles.css.
 */
async function servesDashboard(bin: string, cwd: string): Promise<void> {
  const command = bin.endsWith('.js') ? [process.execPath, bin] : [bin];
  // NO_COLOR: under CI picocolors would wrap the printed address in escape sequences.
  const child = spawn(command[0] as string, [...command.slice(1), 'dashboard', '--port', '0'], {
    cwd,
    env: { ...process.env, NO_COLOR: '1' },
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const collect = (chunk: string) => {
        output += chunk;
        const match = /on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
        if (match) resolve(match[1] as string);
      };
      child.stdout.setEncoding('utf8').on('data', collect);
      child.stderr.setEncoding('utf8').on('data', collect);
      child.once('exit', (code) => reject(new Error(`pixhook dashboard exited (${code}): ${output}`)));
    });
    for (const [file, type] of [
      ['', 'text/html'],
      ['app.js', 'text/javascript'],
      ['styles.css', 'text/css'],
    ]) {
      const response = await fetch(`${url}${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get('content-type')).toMatch(new RegExp(`^${type}`));
      expect((await response.text()).length).toBeGreaterThan(100);
    }
  } finally {
    child.kill();
  }
}

/** Packages by name, with their tarballs: `npm install`ed together into a new project (outside the scratch one). */
async function npmInstalled(names: string[], prefix: string): Promise<string> {
  const chosen = names.map((name) => packages.find((pkg) => pkg.name === name) as (typeof packages)[number]);
  const app = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(app);
  const tarballs = chosen.map((each) => (installed.get(each.name) as InstalledPackage).tarball);
  const install = await npmInstallOffline(app, tarballs, chosen, ROOT);
  expect(install.code, install.stderr).toBe(0);
  return app;
}

/** @pixhook/cli installed with npm from its tarball and core's alone, once for the tests that need it. */
let cliAlone: Promise<string> | undefined;
const installCliAlone = () => {
  cliAlone ??= npmInstalled(['@pixhook/cli', '@pixhook/core'], 'pixhook-npm-install-');
  return cliAlone;
};

/** @pixhook/cli, core and the dashboard installed with npm together, for the dashboard's test. */
let dashboardBeside: Promise<string> | undefined;
const installDashboardBeside = () => {
  dashboardBeside ??= npmInstalled(['@pixhook/cli', '@pixhook/core', '@pixhook/dashboard'], 'pixhook-dashboard-');
  return dashboardBeside;
};

/** Runs attw on every tarball, two at a time (each loads the TypeScript compiler). */
function startAttw(): void {
  const [command, prefix] = attwCommand(ROOT);
  const lanes: Promise<unknown>[] = [Promise.resolve(), Promise.resolve()];
  packages.forEach((pkg, i) => {
    const { tarball } = installed.get(pkg.name) as InstalledPackage;
    const ignore = ATTW_IGNORED_RULES[pkg.name] ?? [];
    const args = [...prefix, tarball, '--format', 'json', ...(ignore.length ? ['--ignore-rules', ...ignore] : [])];
    const lane = i % lanes.length;
    const result = (lanes[lane] as Promise<unknown>).then(() =>
      run(command, args, { cwd: scratch, timeoutMs: 60_000 }),
    );
    lanes[lane] = result.catch(() => {});
    attw.set(pkg.name, result);
  });
}

beforeAll(async () => {
  installed = await installPacked(packages, ROOT, scratch);
  startAttw();
  copyFileSync(join(ROOT, 'test/helpers/packaging-probe.mjs'), join(scratch, 'probe.mjs'));
  copyFileSync(join(ROOT, 'test/helpers/packaging-probe.cjs'), join(scratch, 'probe.cjs'));
  [esm, cjs] = await Promise.all([probe(join(scratch, 'probe.mjs')), probe(join(scratch, 'probe.cjs'))]);
  // Both npm installs start once the hook's own work is done, together, while the other tests run.
  // The tests that use them await them (and fail with an install's error: caught here only so that
  // it is not unhandled meanwhile).
  const names = new Set(packages.map((pkg) => pkg.name));
  if (names.has('@pixhook/cli') && names.has('@pixhook/core')) {
    installCliAlone().catch(() => {});
    if (names.has('@pixhook/dashboard')) installDashboardBeside().catch(() => {});
  }
}, 60_000);

afterAll(async () => {
  // Let attw runs that a failed test did not wait for finish before their files go.
  await Promise.allSettled(attw.values());
  // And the npm installs started in beforeAll, even those no test ran to wait for.
  await Promise.allSettled([cliAlone, dashboardBeside]);
  for (const dir of [scratch, ...cleanups]) rmSync(dir, { recursive: true, force: true });
});

it('finds the public packages under packages/ and loads them from outside the workspace', () => {
  expect(packages.map((pkg) => pkg.name)).toEqual(
    expect.arrayContaining(['@pixhook/core', '@pixhook/express', '@pixhook/fastify', '@pixhook/koa']),
  );
  expect(relative(ROOT, scratch).startsWith('..')).toBe(true);
});

it('runs a signed delivery through the packed core, from ESM and from CommonJS', () => {
  for (const report of [esm, cjs]) {
    expect(report.smoke).toEqual({ signed: 200, forged: 400, ran: true });
  }
});

describe.each(packages)('$name', (pkg) => {
  const expected = EXPECTED[pkg.name];

  it('has a dist built from its current src', () => {
    expect(staleBuild(pkg)).toBeUndefined();
  });

  it('packs its README and built files only', () => {
    const { files } = installed.get(pkg.name) as InstalledPackage;
    expect(files).toContain('README.md');
    expect(files).toContain('package.json');
    expect(files.filter((file) => /(^|\/)(src|test)\/|\.test\.|\.tsbuildinfo$/.test(file))).toEqual([]);
  });

  if (expected) {
    it('exports every entry point the contract names', () => {
      expect(exportedSubpaths(pkg.manifest)).toEqual(expect.arrayContaining(Object.keys(expected)));
    });
  }

  describe.each(exportedSubpaths(pkg.manifest))('%s', (subpath) => {
    const spec = specifier(pkg.name, subpath);
    const want = expected?.[subpath];

    const what =
      subpath === './package.json'
        ? 'the packed package.json'
        : want
          ? Object.keys(want).join(', ')
          : 'the same names (nothing listed in EXPECTED)';
    it(`import() and require() resolve to the packed files and give ${what}`, () => {
      const { dir } = installed.get(pkg.name) as InstalledPackage;
      const fromEsm = esm.modules[spec] as ModuleReport;
      const fromCjs = cjs.modules[spec] as ModuleReport;
      expect(fromEsm.error, `import('${spec}')`).toBeUndefined();
      expect(fromCjs.error, `require('${spec}')`).toBeUndefined();
      for (const report of [fromEsm, fromCjs]) {
        expect(relative(dir, report.resolved as string).startsWith('..'), report.resolved).toBe(false);
      }
      if (subpath === './package.json') {
        expect([fromEsm.name, fromCjs.name]).toEqual([pkg.name, pkg.name]);
        return;
      }
      const esmExports = fromEsm.exports ?? {};
      const cjsExports = fromCjs.exports ?? {};
      if (want) expect(esmExports).toMatchObject(want);
      if (Object.keys(esmExports).join() === 'default') {
        // A module with only a default export: require() must give that value itself.
        expect(fromCjs.kind).toBe(esmExports.default);
        expect(fromCjs.name).toBe(fromEsm.defaultName);
        if (fromCjs.kind === 'function') expect(fromCjs.selfDefault).toBe(true);
      } else {
        expect(Object.keys(esmExports).length).toBeGreaterThan(0);
        expect(cjsExports).toEqual(esmExports);
      }
    });
  });

  it('passes publint (strict: warnings fail too)', async () => {
    const { dir } = installed.get(pkg.name) as InstalledPackage;
    // The unpacked tarball holds exactly the published files, so publint needs no packing of its own.
    const { messages, pkg: manifest } = await publint({ pkgDir: dir, pack: false, level: 'warning', strict: true });
    expect(messages.map((message) => `${message.type}: ${formatMessage(message, manifest, { color: false })}`)).toEqual(
      [],
    );
  });

  it('passes @arethetypeswrong/cli (node10, node16 CJS and ESM, bundler)', async () => {
    const result = (await attw.get(pkg.name)) as RunResult;
    const json = result.stdout.indexOf('{');
    const report = (json === -1 ? {} : JSON.parse(result.stdout.slice(json))) as {
      problems?: Record<string, { kind: string; entrypoint: string; resolutionKind?: string }[]>;
    };
    // The JSON lists ignored problems too; the exit code is what honours --ignore-rules.
    const problems = Object.values(report.problems ?? {})
      .flat()
      .map((problem) => `${problem.kind} at ${problem.entrypoint} (${problem.resolutionKind ?? 'every resolution'})`);
    expect(result.code, [result.stderr, ...problems].join('\n')).toBe(0);
    expect(report.problems, 'attw found no type declarations in the package').toBeDefined();
  }, 60_000);

  const bins = typeof pkg.manifest.bin === 'string' ? { [pkg.name]: pkg.manifest.bin } : (pkg.manifest.bin ?? {});
  for (const [command, file] of Object.entries(bins)) {
    it(`ships the ${command} command, which answers --help`, async () => {
      const path = join((installed.get(pkg.name) as InstalledPackage).dir, file);
      expect(existsSync(path)).toBe(true);
      expect(readFileSync(path, 'utf8').startsWith('#!/usr/bin/env node')).toBe(true);
      const result = await run(process.execPath, [path, '--help'], { cwd: scratch, timeoutMs: 15_000 });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.length).toBeGreaterThan(0);
    });
  }

  if (pkg.name === '@pixhook/cli') {
    it('installs with npm from its tarball and core’s alone (@pixhook/bullmq is an optional peer): every command but dead-letters runs, which names the package to add', async () => {
      const app = await installCliAlone();
      expect(existsSync(join(app, 'node_modules/@pixhook/bullmq'))).toBe(false);
      expect(existsSync(join(app, 'node_modules/bullmq'))).toBe(false);
      const bin = join(app, 'node_modules/.bin/pixhook');
      const help = await run(bin, ['--help'], { cwd: app, timeoutMs: 15_000 });
      expect(help.code, help.stderr).toBe(0);
      writeFileSync(join(app, 'event.json'), '{"id":"evt_1"}');
      const sign = await run(bin, ['sign', '--secret', 'whsec_npm_install', '--body', 'event.json'], {
        cwd: app,
        timeoutMs: 15_000,
      });
      expect(sign.code, sign.stderr).toBe(0);
      expect(sign.stdout).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/m);
      const deadLetters = await run(bin, ['dead-letters', 'list'], { cwd: app, timeoutMs: 15_000 });
      expect(deadLetters.code).toBe(1);
      expect(deadLetters.stderr).toContain('dead-letters needs @pixhook/bullmq, which is not installed');
      expect(deadLetters.stderr).toContain('npm install --save-dev @pixhook/bullmq');
    }, 180_000);

    it('without @pixhook/dashboard, `pixhook dashboard` exits 2 saying to install it; run in a project that has it (npx, pnpm’s strict layout), it loads it from there', async () => {
      const app = await installCliAlone();
      expect(existsSync(join(app, 'node_modules/@pixhook/dashboard'))).toBe(false);
      const bin = join(app, 'node_modules/.bin/pixhook');
      const missing = await run(bin, ['dashboard', '--port', '0'], { cwd: app, timeoutMs: 15_000 });
      expect(missing.code).toBe(2);
      expect(missing.stdout).toBe('');
      // Under CI picocolors colours the message's "pixhook:".
      expect(stripVTControlCharacters(missing.stderr)).toContain(
        'pixhook: the dashboard is its own package: npm install -D @pixhook/dashboard (same version as @pixhook/cli), then run pixhook dashboard again.',
      );
      // The same binary, which cannot see the dashboard from where it is installed, run in the
      // scratch project, whose node_modules holds every package.
      await servesDashboard(bin, scratch);
    }, 180_000);
  }

  if (pkg.name === '@pixhook/dashboard') {
    it('installs with npm beside @pixhook/cli: `pixhook dashboard` loads it and serves its page from the installed package', async () => {
      const app = await installDashboardBeside();
      await servesDashboard(join(app, 'node_modules/.bin/pixhook'), app);
    }, 180_000);
  }
});
