// Child process: the Lambda handler in process. `createLambdaHandler(webhooks)(event, context)` for
// three event sources against `webhooks.handle({ method, headers, body })`, the same `webhooks`
// (MemoryStore, one counting handler), the same 1 KiB delivery as the HTTP rows, each call with a
// new event id. Answers `{ candidates, rows }`: each candidate's mean CPU ns per call in every round.
import { MemoryStore, Webhooks } from '@pixhook/core';
import { createLambdaHandler } from '@pixhook/lambda';
import { serve } from '../children.mjs';
import { bodyFrom, bodyTemplate, pixhookHeaders, SECRET } from '../payloads.mjs';
import { roundOrder } from '../stats.mjs';
import {
  deliveryHeaders,
  functionUrlBase64Event,
  httpApiEvent,
  lambdaContext,
  nodeHeaders,
  restEvent,
} from './events.mjs';

// The body of the HTTP rows (http/load.mjs): 1 KiB of ASCII JSON, a fresh event id in each.
const template = bodyTemplate(1024, 'ascii');
let nextId = 1;

let handled = 0;
const store = new MemoryStore();
const webhooks = new Webhooks({ secret: SECRET, store });
webhooks.on('image.created', () => {
  handled++;
});
// Failures reported while measuring (none is expected): any fails the run. The MemoryStore's note
// that it forgot completed events early (it is full: 100,000 ids) is what a busy instance sees too.
const reported = [];
webhooks.onError((error) => {
  if (error.code !== 'DUPLICATE_WINDOW_SHORTENED') reported.push(error.code);
});
const handler = createLambdaHandler(webhooks);

const invoke = ({ event, context }) => handler(event, context);
const lambda = (build) => (headers, body) => ({ event: build(headers, body), context: lambdaContext() });

/**
 * The baseline first. `make(headers, body)` builds one call's input (outside the timed loop), `run`
 * makes the call, `status` reads the answer's status.
 */
const CANDIDATES = [
  {
    id: 'handle',
    label: 'webhooks.handle({ method, headers, body })',
    make: (headers, body) => ({ method: 'POST', headers: nodeHeaders(headers), body }),
    run: (input) => webhooks.handle(input),
    status: (answer) => answer.status,
  },
  {
    id: 'rest',
    label: 'handler: REST API event (payload 1.0)',
    make: lambda(restEvent),
    run: invoke,
    status: (answer) => answer.statusCode,
  },
  {
    id: 'httpApi',
    label: 'handler: HTTP API event (payload 2.0)',
    make: lambda(httpApiEvent),
    run: invoke,
    status: (answer) => answer.statusCode,
  },
  {
    id: 'functionUrl',
    label: 'handler: Function URL event, base64 body',
    make: lambda(functionUrlBase64Event),
    run: invoke,
    status: (answer) => answer.statusCode,
  },
];

/** A signed delivery with a new event id; `tamper` flips one byte of the body after signing. */
function delivery(tamper = false) {
  const body = bodyFrom(template, nextId++);
  const headers = deliveryHeaders(pixhookHeaders(body), body);
  if (tamper) body[body.length - 2] ^= 1;
  return { headers, body };
}

/** `n` inputs of a candidate, each a new delivery. */
function prepare(candidate, n) {
  const items = new Array(n);
  for (let i = 0; i < n; i++) {
    const { headers, body } = delivery();
    items[i] = candidate.make(headers, body);
  }
  return items;
}

// Process CPU time, as in the verification scenario: a descheduled process stops its own clock.
function cpuNow() {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

// process.cpuUsage() counts microseconds, so calls are timed in batches of ~2 ms each.
const BATCH_NS = 2e6;

// One loop for every candidate (optimised once, in the warm-up); the answers are kept to be checked after it.
async function loop(run, items, answers) {
  const start = cpuNow();
  for (let i = 0; i < items.length; i++) answers[i] = await run(items[i]);
  return cpuNow() - start;
}

/** One batch of fresh deliveries: its CPU ns; throws unless every call answered 200 and ran the handler once. */
async function batch(candidate, n) {
  const items = prepare(candidate, n);
  const answers = new Array(n);
  const before = handled;
  const spent = await loop(candidate.run, items, answers);
  const bad = answers.filter((answer) => candidate.status(answer) !== 200).length;
  if (bad > 0 || handled - before !== n || reported.length > 0) {
    throw new Error(
      `${candidate.id}: ${n} calls, ${bad} not 200, handler ran ${handled - before} times${reported.length > 0 ? `, reported ${[...new Set(reported)].join(', ')}` : ''}`,
    );
  }
  return spent;
}

/** Mean CPU ns per call over batches lasting at least `minCpuTimeMs` in total. */
async function time(candidate, minCpuTimeMs, n) {
  let spent = 0;
  let calls = 0;
  while (spent < minCpuTimeMs * 1e6) {
    spent += await batch(candidate, n);
    calls += n;
  }
  return spent / calls;
}

/**
 * Checks a candidate once: a delivery answers 200 and runs the handler, the same delivery again
 * answers 200 without running it, and a tampered body answers 400.
 */
async function check(candidate) {
  const { headers, body } = delivery();
  const input = candidate.make(headers, body);
  const before = handled;
  const first = candidate.status(await candidate.run(input));
  const again = candidate.status(await candidate.run(input));
  const { headers: h, body: b } = delivery(true);
  const tampered = candidate.status(await candidate.run(candidate.make(h, b)));
  if (first !== 200 || again !== 200 || handled - before !== 1 || tampered !== 400) {
    throw new Error(
      `${candidate.id}: answered ${first}, ${again} to a delivery and its duplicate (handler ran ${handled - before} times), ${tampered} to a tampered body`,
    );
  }
  reported.length = 0; // the tampered body's SIGNATURE_MISMATCH
}

/** A rough cost of one call, to size batches: measured on the baseline. */
async function estimate() {
  const baseline = CANDIDATES[0];
  const n = 256;
  let spent = 0;
  let calls = 0;
  while (spent < 20e6) {
    spent += await batch(baseline, n);
    calls += n;
  }
  return spent / calls;
}

async function bench({ rounds, minCpuTimeMs, warmCpuTimeMs, fill }) {
  for (const candidate of CANDIDATES) await check(candidate);
  const n = Math.max(1, Math.round(BATCH_NS / (await estimate())));
  // Warm-up, not recorded: every candidate reaches optimised code before the first round.
  for (const candidate of CANDIDATES) await time(candidate, warmCpuTimeMs, n);
  // Then the store is filled to MemoryStore's default maxEntries (100,000 ids), so that every
  // round finds it as a busy instance has it: full, forgetting the oldest ids as new ones come.
  while (fill && nextId <= fill) await batch(CANDIDATES[0], n);
  const ns = Object.fromEntries(CANDIDATES.map((c) => [c.id, []]));
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`  lambda: round ${round + 1}/${rounds}\n`);
    // Interleaved: every candidate once per round, in an order that rotates and reverses between rounds.
    for (const candidate of roundOrder(CANDIDATES, round)) {
      ns[candidate.id].push(await time(candidate, minCpuTimeMs, n));
    }
  }
  return {
    candidates: CANDIDATES.map(({ id, label }) => ({ id, label })),
    batch: n,
    storeSize: store.size,
    calls: nextId - 1,
    ns,
  };
}

serve(bench);
process.send({ ready: true });
