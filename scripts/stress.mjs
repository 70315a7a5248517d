#!/usr/bin/env node
// `pnpm test:stress`: the test suites on a busy machine, as CI and contributors' laptops often are.
// Starts busy loops (`node -e 'for(;;){}'`, one per core up to --busy, default 2) that keep the
// cores loaded, runs `pnpm test` and `pnpm test:slow` --runs times each (default 3), stops the loops
// at the end (also on Ctrl-C or a failure), prints a table of the runs and exits 1 if any failed.
//
//   node scripts/stress.mjs                     3 × `pnpm test`, 3 × `pnpm test:slow`, 2 busy loops
//   node scripts/stress.mjs --runs 5 --only test
//   node scripts/stress.mjs --busy 0            no extra load (the suites alone)
//   node scripts/stress.mjs --only test -- packages/postgres   vitest's file filters after --
//
// Each run's whole output goes to a log file (the table names it); failed tests are listed by name.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pnpmCommand } from '@pixhook/test-helpers/build-state';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMMANDS = { test: 'test', slow: 'test:slow' };
const USAGE = `Usage: node scripts/stress.mjs [--runs N] [--only test|slow] [--busy N] [-- vitest file filters]

  --runs N      runs of each command (default 3)
  --only WHICH  only \`pnpm test\` (test) or only \`pnpm test:slow\` (slow); default both
  --busy N      busy loops keeping cores loaded meanwhile (default 2; 0 for none)
`;

function fail(message) {
  process.stderr.write(`pixhook: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let values;
let positionals;
try {
  ({ values, positionals } = parseArgs({
    options: {
      runs: { type: 'string', default: '3' },
      only: { type: 'string' },
      busy: { type: 'string', default: '2' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  }));
} catch (error) {
  fail(error.message);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const wholeNumber = (name, text, min) => {
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > 1_000) {
    fail(`--${name} must be a whole number from ${min} to 1000, got ${JSON.stringify(text)}.`);
  }
  return Number(text);
};
const runs = wholeNumber('runs', values.runs, 1);
const busyCount = wholeNumber('busy', values.busy, 0);
if (values.only !== undefined && !(values.only in COMMANDS)) {
  fail(`--only must be "test" or "slow", got ${JSON.stringify(values.only)}.`);
}
const selected = values.only === undefined ? Object.keys(COMMANDS) : [values.only];

const logDir = mkdtempSync(join(tmpdir(), 'pixhook-stress-'));
const busy = [];
let current;
let stopping = false;

function stopBusy() {
  for (const child of busy.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Ends the running suite (its whole process group: pnpm, vitest and its workers) and the loops. */
function stopAll(signal) {
  stopping = true;
  if (current?.exitCode === null && current.signalCode === null) {
    try {
      process.kill(-current.pid, signal);
    } catch {
      current.kill(signal);
    }
  }
  stopBusy();
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    process.stderr.write(`\npixhook: ${signal}: stopping the suite and the busy loops.\n`);
    stopAll('SIGTERM');
    setTimeout(() => process.exit(130), 2_000).unref();
  });
}
process.on('exit', () => stopBusy());
process.on('uncaughtException', (error) => {
  stopAll('SIGKILL');
  process.stderr.write(`pixhook: stress run failed: ${error.stack ?? error}\n`);
  process.exit(1);
});

/** The names of the tests that failed, from vitest's JSON report (or why there are none). */
function failedTests(reportFile) {
  let report;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
  } catch {
    return ['(no test report: the run ended before vitest wrote it; see the log)'];
  }
  const names = [];
  for (const file of report.testResults ?? []) {
    const path = String(file.name ?? '').replace(ROOT, '');
    const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failed) names.push(`${path} › ${test.fullName ?? test.title}`);
    if (failed.length === 0 && file.status === 'failed')
      names.push(`${path} (${file.message?.split('\n')[0] ?? 'failed'})`);
  }
  return names;
}

function runSuite(which, index) {
  const script = COMMANDS[which];
  const log = join(logDir, `${index}-${which}.log`);
  const report = join(logDir, `${index}-${which}.json`);
  rmSync(report, { force: true });
  const [command, prefix] = pnpmCommand();
  // The default reporter and the summary line as usual, plus a JSON report for the failed names.
  const args = [
    ...prefix,
    script,
    '--reporter=default',
    '--reporter=./test/summary-reporter.ts',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...positionals,
  ];
  const started = performance.now();
  return new Promise((resolve) => {
    const out = createWriteStream(log);
    // Its own process group, so that Ctrl-C here can end vitest's workers too.
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    current = child;
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', (error) => out.write(`\npixhook: could not start ${command}: ${error.message}\n`));
    child.on('close', (code, signal) => {
      out.end();
      current = undefined;
      const seconds = (performance.now() - started) / 1000;
      const ok = code === 0;
      resolve({ which, script, index, ok, code, signal, seconds, log, failed: ok ? [] : failedTests(report) });
    });
  });
}

const cores = availableParallelism();
for (let i = 0; i < busyCount; i++) {
  busy.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
}
process.stdout.write(
  `pixhook stress: ${runs} run(s) of ${selected.map((which) => `pnpm ${COMMANDS[which]}`).join(' and ')} ` +
    `with ${busyCount} busy loop(s) on ${cores} core(s); load average ${loadavg()[0].toFixed(1)}. Logs in ${logDir}\n`,
);

const results = [];
for (let index = 1; index <= runs && !stopping; index++) {
  for (const which of selected) {
    if (stopping) break;
    process.stdout.write(`run ${index}/${runs}: pnpm ${COMMANDS[which]} … `);
    const result = await runSuite(which, index);
    results.push(result);
    process.stdout.write(
      `${result.ok ? 'pass' : result.signal ? 'stopped' : 'FAIL'} in ${result.seconds.toFixed(0)} s (load average ${loadavg()[0].toFixed(1)})\n`,
    );
  }
}
stopBusy();

// One row per run; a run with several failed tests continues on the lines below it.
const header = ['run', 'command', 'result', 'seconds', 'failed tests'];
const all = [header];
for (const r of results) {
  const status = r.ok ? 'pass' : r.signal ? `stopped (${r.signal})` : 'FAIL';
  const first = r.failed[0] ?? (r.ok ? '' : `see ${r.log}`);
  all.push([String(r.index), `pnpm ${r.script}`, status, r.seconds.toFixed(0), first]);
  for (const name of r.failed.slice(1)) all.push(['', '', '', '', name]);
}
const widths = header.map((_, column) => Math.max(...all.map((row) => row[column].length)));
const line = (row) =>
  row
    .map((cell, column) => cell.padEnd(widths[column]))
    .join('  ')
    .trimEnd();
process.stdout.write(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
for (const row of all.slice(1)) process.stdout.write(`${line(row)}\n`);

const failures = results.filter((r) => !r.ok).length;
process.stdout.write(
  `\n${results.length - failures} of ${results.length} run(s) passed${stopping ? ' (stopped early)' : ''}; logs in ${logDir}\n`,
);
process.exit(failures > 0 || stopping ? 1 : 0);
