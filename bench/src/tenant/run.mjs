// Child process: a secret per tenant, in process. `webhooks.handle({ method, headers, body, tenant })`
// with `secret` as a lookup (`async (tenant) => tenants.get(tenant)`, a Map of 1,000 tenants) against
// the same call with a static `secret`, for accepted deliveries (the lookup's answer cached, as by
// default, and not cached); and the refusals: an unknown tenant (its not-found answer cached, and a
// new unknown tenant on every call) against a known tenant's wrong signature, all 400
// SIGNATURE_MISMATCH. The same 1 KiB delivery as the HTTP rows, a new event id on every call.
import { createHmac, randomUUID } from 'node:crypto';
import { MemoryStore, Webhooks } from '@pixhook/core';
import { serve } from '../children.mjs';
import { measure } from '../inprocess.mjs';
import { bodyFrom, bodyTemplate, pixhookHeaders, SECRET, unixNow } from '../payloads.mjs';

const template = bodyTemplate(1024, 'ascii');
let nextId = 1;
let nextStranger = 1;

/** 1,000 tenants, each with its own secret; `acme`'s is the bench's SECRET, which signs every delivery. */
const TENANTS = new Map(Array.from({ length: 999 }, (_, i) => [`tenant_${i}`, `whsec_tenant_${i}_${randomUUID()}`]));
TENANTS.set('acme', SECRET);
const WRONG_SECRET = `whsec_not_acme_${randomUUID()}`;

/** One `Webhooks` with one counting handler and a listener that counts what it is told, by code. */
function server(options) {
  const state = { handled: 0, lookups: 0, reported: new Map() };
  const webhooks = new Webhooks({ store: new MemoryStore(), ...options(state) });
  webhooks.on('image.created', () => {
    state.handled++;
  });
  webhooks.onError((error) => {
    state.reported.set(error.code, (state.reported.get(error.code) ?? 0) + 1);
  });
  return { webhooks, state };
}

const staticServer = server(() => ({ secret: SECRET }));
const lookup = (state) => async (tenant) => {
  state.lookups++;
  return TENANTS.get(tenant);
};
const cachedServer = server((state) => ({ secret: lookup(state) }));
const uncachedServer = server((state) => ({ secret: lookup(state), secretCache: false }));
// Strangers of their own: a new tenant per call fills the cache, which would evict acme's entry.
const strangerServer = server((state) => ({ secret: lookup(state) }));

/** A delivery with a new event id, signed with `secret` (the bench's SECRET unless told). */
function delivery(tenant, secret = SECRET) {
  const body = bodyFrom(template, nextId++);
  const headers = pixhookHeaders(body);
  if (secret !== SECRET) {
    const t = String(unixNow());
    const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
    headers['x-service-signature'] = `t=${t},v1=${v1}`;
  }
  return { method: 'POST', headers, body, tenant };
}

/**
 * A candidate on `on` (a server of the above): its inputs come from `make()`; every answer must have
 * `status`, and accepted ones run the handler once each, refused ones are told to onError as
 * SIGNATURE_MISMATCH and run nothing.
 */
function candidate({ id, label, baseline, on, make, status }) {
  const { webhooks, state } = on;
  let handledBefore = 0;
  let refusedBefore = 0;
  return {
    id,
    label,
    baseline,
    prepare(n) {
      handledBefore = state.handled;
      refusedBefore = state.reported.get('SIGNATURE_MISMATCH') ?? 0;
      return Array.from({ length: n }, make);
    },
    run: (input) => webhooks.handle(input),
    check(answers, n) {
      const bad = answers.filter(
        (answer) =>
          answer.status !== status || (status === 400 && !answer.body.includes('"code":"SIGNATURE_MISMATCH"')),
      ).length;
      const ran = state.handled - handledBefore;
      const refused = (state.reported.get('SIGNATURE_MISMATCH') ?? 0) - refusedBefore;
      const others = [...state.reported.keys()].filter((code) => code !== 'SIGNATURE_MISMATCH');
      const expected = status === 200 ? { ran: n, refused: 0 } : { ran: 0, refused: n };
      if (bad > 0 || ran !== expected.ran || refused !== expected.refused || others.length > 0) {
        throw new Error(
          `${id}: ${n} calls, ${bad} not ${status}, handler ran ${ran} times, ${refused} SIGNATURE_MISMATCH told to onError${others.length > 0 ? `, also ${others.join(', ')}` : ''}`,
        );
      }
    },
  };
}

const CANDIDATES = [
  candidate({
    id: 'static',
    label: 'static secret (`secret: SIGNING_SECRET`)',
    baseline: 'static',
    on: staticServer,
    make: () => delivery(undefined),
    status: 200,
  }),
  candidate({
    id: 'cached',
    label: 'lookup, cached (`secret: async (tenant) => …`, the default `secretCache`)',
    baseline: 'static',
    on: cachedServer,
    make: () => delivery('acme'),
    status: 200,
  }),
  candidate({
    id: 'uncached',
    label: 'lookup, not cached (`secretCache: false`): one async call per delivery',
    baseline: 'static',
    on: uncachedServer,
    make: () => delivery('acme'),
    status: 200,
  }),
  candidate({
    id: 'wrong',
    label: "refused: a known tenant's wrong signature (lookup cached)",
    baseline: 'wrong',
    on: cachedServer,
    make: () => delivery('acme', WRONG_SECRET),
    status: 400,
  }),
  candidate({
    id: 'unknown',
    label: 'refused: an unknown tenant (its not-found answer cached)',
    baseline: 'wrong',
    on: cachedServer,
    make: () => delivery('nobody'),
    status: 400,
  }),
  candidate({
    id: 'stranger',
    label: 'refused: a new unknown tenant on every call (a lookup each)',
    baseline: 'wrong',
    on: strangerServer,
    make: () => delivery(`stranger_${nextStranger++}`),
    status: 400,
  }),
];

async function bench({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  // The tenants' secrets are looked up once each and then cached: a second delivery for acme or
  // nobody makes no call; with secretCache: false, every delivery does.
  const before = { cached: cachedServer.state.lookups, uncached: uncachedServer.state.lookups };
  for (const tenant of ['acme', 'acme', 'nobody', 'nobody']) await cachedServer.webhooks.handle(delivery(tenant));
  for (let i = 0; i < 2; i++) await uncachedServer.webhooks.handle(delivery('acme'));
  const lookups = {
    cached: cachedServer.state.lookups - before.cached,
    uncached: uncachedServer.state.lookups - before.uncached,
  };
  if (lookups.cached !== 2 || lookups.uncached !== 2) {
    throw new Error(
      `lookups: ${lookups.cached} for 2 tenants cached (expected 2), ${lookups.uncached} uncached (expected 2)`,
    );
  }
  for (const { state } of [cachedServer, uncachedServer]) state.reported.clear();
  const run = await measure(CANDIDATES, { rounds, minCpuTimeMs, warmCpuTimeMs, name: 'tenant' });
  return {
    candidates: CANDIDATES.map(({ id, label, baseline }) => ({ id, label, baseline })),
    calls: nextId - 1,
    tenants: TENANTS.size,
    ...run,
  };
}

serve(bench);
process.send({ ready: true });
