// Child process (run with --expose-gc): one pixhook adapter whose handler holds every delivery
// until `count` of them (set by `prepare`) are in flight at once, and reports the process's memory around that.
import { readFileSync, writeFileSync } from 'node:fs';
import { serve } from '../children.mjs';
import { startServer } from '../http/apps.mjs';

const { framework, holdMs } = JSON.parse(process.argv[2]);
let expected = 0;
const gc = globalThis.gc;

/** Peak resident set size since the last reset (Linux VmHWM), in bytes; undefined elsewhere. */
function peakRss() {
  try {
    const kb = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB/m)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0); false where that is not possible. */
function resetPeakRss() {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

let inFlight = 0;
let release;
let barrier;
let atBarrier;
let sampler;
let sampled;

function sample() {
  const m = process.memoryUsage();
  sampled.rss = Math.max(sampled.rss, m.rss);
  sampled.arrayBuffers = Math.max(sampled.arrayBuffers, m.arrayBuffers);
  sampled.heapUsed = Math.max(sampled.heapUsed, m.heapUsed);
}

function reset() {
  inFlight = 0;
  barrier = new Promise((resolve) => {
    release = resolve;
  });
  atBarrier = undefined;
}

async function handler() {
  inFlight++;
  if (inFlight === expected) {
    // Every delivery is verified and parsed, and none has answered: what each holds now is what a
    // delivery costs while its handler runs. After a full GC only what is still referenced stays.
    sample();
    gc();
    atBarrier = { ...process.memoryUsage() };
    release();
  }
  const timeout = new Promise((resolve) => setTimeout(resolve, holdMs));
  await Promise.race([barrier, timeout]);
}

const server = await startServer({ framework, variant: 'pixhook', handler });
serve(async ({ cmd, count }) => {
  if (cmd === 'prepare') {
    expected = count;
    reset();
    gc();
    gc();
    const baseline = process.memoryUsage();
    const resettable = resetPeakRss();
    sampled = { rss: baseline.rss, arrayBuffers: baseline.arrayBuffers, heapUsed: baseline.heapUsed };
    sampler = setInterval(sample, 1);
    return { baseline, resettable };
  }
  if (cmd === 'report') {
    clearInterval(sampler);
    sample();
    return { peakRss: peakRss(), sampled, atBarrier, reachedBarrier: atBarrier !== undefined };
  }
  if (cmd === 'close') {
    await server.close();
    return { closed: true };
  }
  throw new Error(`unknown command ${cmd}`);
});
process.send({ ready: true, port: server.port });
