// `pnpm bench` and `pnpm bench:smoke`: runs the scenarios, prints tables, writes JSON results and,
// for a full run of everything, docs/benchmarks.md and the bench summary in docs/README.md.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runHttp } from './http/scenario.mjs';
import { runInbox } from './inbox/scenario.mjs';
import { runLambda } from './lambda/scenario.mjs';
import { machine } from './machine.mjs';
import { runMemory } from './memory/scenario.mjs';
import { runOrdering } from './ordering/scenario.mjs';
import { pinning } from './pin.mjs';
import { printResults } from './report/console.mjs';
import { markdown } from './report/markdown.mjs';
import { readmeSection } from './report/readme.mjs';
import { targets } from './report/targets.mjs';
import { runSchema } from './schema/scenario.mjs';
import { runTenant } from './tenant/scenario.mjs';
import { runVerify } from './verify/scenario.mjs';

const SETTINGS = {
  full: {
    verify: { rounds: 7, minCpuTimeMs: 60, warmCpuTimeMs: 60 },
    http: {
      rounds: 4,
      seconds: 2,
      warmSeconds: 1.5,
      connections: 32,
      // The queued frameworks' pixhook servers again, at a fixed pace well under their capacity.
      fixed: { rate: 1000, rounds: 3, seconds: 2, warmSeconds: 0.5 },
    },
    memory: { rounds: 3, count: 64 },
    // Filled to MemoryStore's default maxEntries before the rounds, as a busy instance's store is.
    lambda: { rounds: 7, minCpuTimeMs: 100, warmCpuTimeMs: 100, fill: 100_000 },
    // The archive's cost per delivery (HTTP rounds, with and without it), then its list's time.
    inbox: {
      cost: { rounds: 4, seconds: 2, warmSeconds: 1, connections: 32 },
      list: { sizes: [10_000, 100_000, 1_000_000], samples: 15 },
    },
    // In process, as the Lambda handler: schemas' cost per delivery; a secret per tenant.
    schema: { rounds: 7, minCpuTimeMs: 60, warmCpuTimeMs: 60 },
    tenant: { rounds: 7, minCpuTimeMs: 60, warmCpuTimeMs: 60 },
    // In process too: the ordering guard and a named handler on MemoryStore, RedisStore, PostgresStore.
    ordering: { rounds: 7, minCpuTimeMs: 60, warmCpuTimeMs: 60 },
  },
  smoke: {
    verify: { rounds: 1, minCpuTimeMs: 3, warmCpuTimeMs: 3 },
    http: {
      rounds: 1,
      seconds: 0.5,
      warmSeconds: 0,
      connections: 32,
      fixed: { rate: 1000, rounds: 1, seconds: 1, warmSeconds: 0, frameworks: ['express'] },
    },
    memory: { rounds: 1, count: 64 },
    lambda: { rounds: 1, minCpuTimeMs: 3, warmCpuTimeMs: 3, fill: 0 },
    inbox: {
      cost: { rounds: 1, seconds: 0.5, warmSeconds: 0, connections: 32 },
      list: { sizes: [10_000], samples: 3 },
    },
    schema: { rounds: 1, minCpuTimeMs: 3, warmCpuTimeMs: 3 },
    tenant: { rounds: 1, minCpuTimeMs: 3, warmCpuTimeMs: 3 },
    ordering: { rounds: 1, minCpuTimeMs: 3, warmCpuTimeMs: 3 },
  },
};

const args = process.argv.slice(2);
const option = (name) =>
  args
    .find((a) => a.startsWith(`--${name}=`))
    ?.split('=')[1]
    ?.split(',');
const smoke = args.includes('--smoke');
const only = option('only');
const frameworks = option('frameworks');
const settings = SETTINGS[smoke ? 'smoke' : 'full'];
const root = fileURLToPath(new URL('../../', import.meta.url));
const benchDir = fileURLToPath(new URL('../', import.meta.url));

const scenarios = {
  verify: () => runVerify(settings.verify),
  http: () => runHttp({ ...settings.http, frameworks }),
  memory: () => runMemory(settings.memory),
  lambda: () => runLambda(settings.lambda),
  inbox: () => runInbox(settings.inbox),
  schema: () => runSchema(settings.schema),
  tenant: () => runTenant(settings.tenant),
  ordering: () => runOrdering(settings.ordering),
};

async function main() {
  const started = Date.now();
  const results = { mode: smoke ? 'smoke' : 'full', settings, machine: machine(), problems: [] };
  console.log(`pixhook benchmarks (${results.mode}): Node ${process.version}, ${pinning.note}`);
  for (const [name, run] of Object.entries(scenarios)) {
    if (only && !only.includes(name)) continue;
    console.error(`${name}…`);
    const t0 = Date.now();
    try {
      results[name] = await run();
      results.problems.push(...(results[name].problems ?? []));
    } catch (error) {
      results.problems.push(`${name}: ${error?.message ?? error}`);
    }
    console.error(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  results.seconds = (Date.now() - started) / 1000;
  const targetList = targets(results);
  results.targets = targetList;
  printResults(results, targetList);

  mkdirSync(`${benchDir}results`, { recursive: true });
  const json = `${benchDir}results/${smoke ? 'smoke' : 'latest'}.json`;
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nresults: ${json}`);
  const complete = !smoke && !only && !frameworks && results.problems.length === 0;
  if (complete) {
    writeFileSync(`${root}docs/benchmarks.md`, markdown(results, targetList, settings));
    console.log('docs/benchmarks.md: regenerated');
    writeReadme(readmeSection(results, targetList));
  }
  console.log(`done in ${results.seconds.toFixed(0)} s`);
  if (results.problems.length > 0) {
    console.error(`\n${results.problems.length} problem(s): a scenario is broken`);
    for (const p of results.problems) console.error(`- ${p}`);
    process.exitCode = 1;
  }
}

/** Replaces the bench summary (docs/README.md) through the repository's own script, under its lock where flock exists. */
function writeReadme(section) {
  const file = `${benchDir}results/readme-section.md`;
  writeFileSync(file, section);
  const script = ['node', 'scripts/readme-section.mjs', 'bench', file];
  try {
    try {
      execFileSync('flock', ['/tmp/pixhook-readme.lock', ...script], { cwd: root, stdio: 'inherit' });
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
      execFileSync(script[0], script.slice(1), { cwd: root, stdio: 'inherit' });
    }
  } catch {
    console.error('docs/README.md: bench summary not updated');
  }
}

await main();
