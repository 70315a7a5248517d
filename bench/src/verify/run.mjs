// Child process: the in-process verification benchmark. Answers `{ rows }`, one row per
// (size, body kind, candidate), each with its mean ns/op in every round.
import { serve } from '../children.mjs';
import { bodyFrom, bodyTemplate, KINDS, SIZES } from '../payloads.mjs';
import { roundOrder } from '../stats.mjs';
import { CANDIDATES as ALL, check } from './candidates.mjs';

// Process CPU time, not wall time: on a shared machine a process that is descheduled stops its own
// clock, so other users' load does not count against whichever candidate happened to be running.
function cpuNow() {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

// process.cpuUsage() counts microseconds, so calls are timed in batches of ~2 ms each.
const BATCH_NS = 2e6;

// One loop for every candidate, optimised once in the warm-up: a benchmark library that generates
// a fresh loop per measurement (mitata) has it recompiled on a background thread each time, and
// that compile time lands in the process CPU time of whichever candidate is being measured.
function loop(run, n) {
  const start = cpuNow();
  for (let i = 0; i < n; i++) run();
  return cpuNow() - start;
}

async function loopAsync(run, n) {
  const start = cpuNow();
  for (let i = 0; i < n; i++) await run();
  return cpuNow() - start;
}

/** Mean CPU ns per call over batches lasting at least `minCpuTimeMs` in total. */
async function time(candidate, body, minCpuTimeMs, estimateNs) {
  // Signed afresh for every measurement, so timestamps stay inside the 300 s tolerance.
  const run = candidate.prepare(body);
  const n = Math.max(1, Math.round(BATCH_NS / estimateNs));
  // No forced GC before measuring: it shrinks the young generation, which then penalises whichever
  // candidate allocates more until it grows back; a server runs in the steady state instead.
  let spent = 0;
  let calls = 0;
  while (spent < minCpuTimeMs * 1e6) {
    spent += candidate.async ? await loopAsync(run, n) : loop(run, n);
    calls += n;
  }
  return spent / calls;
}

async function warm(candidate, body, cpuTimeMs) {
  const run = candidate.prepare(body);
  const start = cpuNow();
  while (cpuNow() - start < cpuTimeMs * 1e6) {
    if (candidate.async) await loopAsync(run, 16);
    else loop(run, 16);
  }
}

/** A rough cost of one call, to size batches: measured once on the floor + parse candidate. */
function estimate(body) {
  const run = ALL.find((c) => c.id === 'floorParse').prepare(body);
  const start = cpuNow();
  let n = 0;
  while (cpuNow() - start < 20e6) {
    run();
    n++;
  }
  return (cpuNow() - start) / n;
}

async function bench({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  const only = process.env.BENCH_ONLY?.split(',');
  const CANDIDATES = only ? ALL.filter((c) => only.includes(c.id)) : ALL;
  const cases = [];
  for (const size of SIZES) {
    for (const kind of KINDS) {
      const body = bodyFrom(bodyTemplate(size.bytes, kind), 1);
      for (const candidate of CANDIDATES) await check(candidate, body);
      cases.push({
        size,
        kind,
        body,
        estimateNs: estimate(body),
        ns: Object.fromEntries(CANDIDATES.map((c) => [c.id, []])),
      });
    }
  }
  // Warm-up, not recorded: every candidate reaches optimised code before the first round.
  for (const c of cases) {
    for (const candidate of CANDIDATES) await warm(candidate, c.body, warmCpuTimeMs);
  }
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`  verify: round ${round + 1}/${rounds}\n`);
    for (const c of cases) {
      // Interleaved: every candidate once per round, in an order that rotates and reverses between rounds.
      for (const candidate of roundOrder(CANDIDATES, round)) {
        c.ns[candidate.id].push(await time(candidate, c.body, minCpuTimeMs, c.estimateNs));
      }
    }
  }
  return {
    candidates: CANDIDATES.map(({ id, label }) => ({ id, label })),
    rows: cases.map(({ size, kind, ns }) => ({ size: size.name, bytes: size.bytes, kind, ns })),
  };
}

serve(bench);
process.send({ ready: true });
