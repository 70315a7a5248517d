// In-process timing shared by the schema and tenant scenarios (children pinned to one core): each
// candidate's calls timed on the process's CPU clock in batches of ~2 ms, every candidate once per
// round in an order that rotates and reverses between rounds, after a warm-up; as src/lambda/run.mjs.
import { ratios, roundOrder, spread } from './stats.mjs';

// Process CPU time: a descheduled process stops its own clock.
function cpuNow() {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

// process.cpuUsage() counts microseconds, so calls are timed in batches of ~2 ms each.
const BATCH_NS = 2e6;

// One loop for every candidate (optimised once, in the warm-up); the answers are checked after it.
// Also times the loop on the wall clock (`wall.ns`): a call that waits on a server (Redis, Postgres)
// spends that wait off the CPU clock.
async function loop(run, items, answers, wall) {
  const start = cpuNow();
  const wallStart = performance.now();
  for (let i = 0; i < items.length; i++) answers[i] = await run(items[i]);
  wall.ns = (performance.now() - wallStart) * 1e6;
  return cpuNow() - start;
}

/**
 * A candidate: `{ id, label, prepare(n) => items, run(item) => answer | Promise, check(answers, n) }`.
 * `prepare` builds one batch's inputs outside the timed loop; `check` throws unless every answer
 * of the batch is the expected one (a broken candidate fails the run instead of measuring).
 */
async function batch(candidate, n, wall = { ns: 0 }) {
  const items = candidate.prepare(n);
  const answers = new Array(n);
  const spent = await loop(candidate.run, items, answers, wall);
  candidate.check(answers, n);
  return spent;
}

/**
 * Mean CPU ns per call over batches lasting at least `minCpuTimeMs` in total; `wall.ns` is set to
 * the mean wall-clock ns per call of the same batches.
 */
async function time(candidate, minCpuTimeMs, n, wall = { ns: 0 }) {
  let spent = 0;
  let waited = 0;
  let calls = 0;
  const one = { ns: 0 };
  while (spent < minCpuTimeMs * 1e6) {
    spent += await batch(candidate, n, one);
    waited += one.ns;
    calls += n;
  }
  wall.ns = waited / calls;
  return spent / calls;
}

/**
 * Times every candidate: `{ batch, ns, wallNs }` where `ns[id]` holds the mean CPU ns per call of
 * each round, and `wallNs[id]` the mean wall-clock ns per call of the same calls. Batches are sized
 * on the first candidate (~2 ms of CPU each).
 */
export async function measure(candidates, { rounds, minCpuTimeMs, warmCpuTimeMs, name }) {
  let spent = 0;
  let calls = 0;
  while (spent < 20e6) {
    spent += await batch(candidates[0], 256);
    calls += 256;
  }
  const n = Math.max(1, Math.round(BATCH_NS / (spent / calls)));
  // Warm-up, not recorded: every candidate reaches optimised code before the first round.
  for (const candidate of candidates) await time(candidate, warmCpuTimeMs, n);
  const ns = Object.fromEntries(candidates.map((c) => [c.id, []]));
  const wallNs = Object.fromEntries(candidates.map((c) => [c.id, []]));
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`  ${name}: round ${round + 1}/${rounds}\n`);
    for (const candidate of roundOrder(candidates, round)) {
      const wall = { ns: 0 };
      ns[candidate.id].push(await time(candidate, minCpuTimeMs, n, wall));
      wallNs[candidate.id].push(wall.ns);
    }
  }
  return { batch: n, ns, wallNs };
}

/**
 * Rows of a report from `measure()`'s `ns`: each candidate's time per call and ops/s of one core,
 * and, per round, its ops/s ratio to its baseline (`baseline` id, else the first candidate's) and
 * the CPU ns it adds per call. Given `measure()`'s `wallNs` too, each row also has the wall-clock
 * time per call (`wall`), its calls per second against the baseline's (`wallVsBaseline`, as
 * `vsBaseline`) and the wall ns it adds (`wallAddedNs`).
 */
export function inProcessRows(candidates, ns, wallNs) {
  const ops = (id) => ns[id].map((value) => 1e9 / value);
  return candidates.map(({ id, label, baseline = candidates[0].id }) => ({
    id,
    label,
    baseline,
    ns: ns[id],
    time: spread(ns[id]),
    ops: spread(ops(id)),
    vsBaseline: spread(ratios(ops(id), ops(baseline))),
    addedNs: spread(ns[id].map((value, i) => value - ns[baseline][i])),
    ...(wallNs
      ? {
          wallNs: wallNs[id],
          wall: spread(wallNs[id]),
          wallVsBaseline: spread(ratios(wallNs[baseline], wallNs[id])),
          wallAddedNs: spread(wallNs[id].map((value, i) => value - wallNs[baseline][i])),
        }
      : {}),
  }));
}
