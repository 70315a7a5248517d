import { describe, expect, it } from 'vitest';
import {
  type IdempotencyStore,
  MemoryStore,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_deadline_test_5a4b3c';

/** A promise and the functions that settle it. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const errors: WebhookVerificationError[] = [];
  webhooks.onError((error) => void errors.push(error));
  return { webhooks, errors };
}

const code = (body: string) => (JSON.parse(body) as { error?: { code: string } }).error?.code;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check()` is true, polling; throws with `what` after 10 s (room for a busy machine). */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('handler deadline (handlerTimeoutMs)', () => {
  it('a handler still running at the deadline → 503 HANDLER_TIMEOUT; retries meanwhile → 409; its success completes the event', async () => {
    const { webhooks, errors } = setup({ handlerTimeoutMs: 50 });
    const gate = deferred();
    let runs = 0;
    webhooks.on('image.created', async () => {
      runs++;
      await gate.promise;
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });

    const first = await webhooks.handle(delivery);
    expect(first.status).toBe(503);
    expect(code(first.body)).toBe('HANDLER_TIMEOUT');
    expect(errors.map((e) => e.code)).toEqual(['HANDLER_TIMEOUT']);

    const retry = await webhooks.handle(delivery);
    expect(retry.status).toBe(409);
    expect(runs).toBe(1);

    gate.resolve();
    await sleep(10);
    const later = await webhooks.handle(delivery);
    expect(later.status).toBe(200);
    expect(JSON.parse(later.body)).toEqual({ received: true, duplicate: true });
    expect(runs).toBe(1);
  });

  it('a timed-out handler that then fails releases its claim and onError is told of both', async () => {
    const { webhooks, errors } = setup({ handlerTimeoutMs: 30 });
    const gate = deferred();
    let runs = 0;
    webhooks.on('image.deleted', async () => {
      runs++;
      if (runs === 1) await gate.promise;
    });
    const delivery = createSignedRequest(createTestEvent('image.deleted'), { secret: SECRET });
    expect((await webhooks.handle(delivery)).status).toBe(503);
    gate.reject(new Error('billing API down'));
    await sleep(10);
    expect(errors.map((e) => e.code)).toEqual(['HANDLER_TIMEOUT', 'HANDLER_FAILED']);
    expect((errors[1]?.cause as Error | undefined)?.message).toBe('billing API down');
    // Released: the next delivery runs it again.
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs).toBe(2);
  });

  it('keeps renewing the claim while a timed-out handler runs past the store TTL, so no retry runs it beside', async () => {
    // Renewed every 200 ms: a busy machine's late timers stay well inside the TTL.
    const store = new MemoryStore({ inFlightTtlMs: 600 });
    const { webhooks, errors } = setup({ handlerTimeoutMs: 20, store });
    const gate = deferred();
    let runs = 0;
    webhooks.on('quota.warned', async () => {
      runs++;
      await gate.promise;
    });
    const delivery = createSignedRequest(createTestEvent('quota.warned'), { secret: SECRET });
    expect((await webhooks.handle(delivery)).status).toBe(503);
    await sleep(2_000); // more than three claim TTLs
    expect((await webhooks.handle(delivery)).status).toBe(409);
    expect(runs).toBe(1);
    gate.resolve();
    await sleep(10);
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs).toBe(1);
    expect(errors.map((e) => e.code)).toEqual(['HANDLER_TIMEOUT', 'IN_FLIGHT']);
  });

  it('handlerTimeoutMs: false waits for the handler', async () => {
    const { webhooks } = setup({ handlerTimeoutMs: false });
    webhooks.on('image.created', () => sleep(40));
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    expect((await webhooks.handle(delivery)).status).toBe(200);
  });

  it('defaults: 8 s for handlers, 5 s for bodies, 8 s for the whole delivery; all documented as options', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(webhooks.bodyTimeoutMs).toBe(5_000);
    // Without a body deadline of its own, the delivery's budget still bounds the body.
    expect(new Webhooks({ secret: SECRET, bodyTimeoutMs: false }).bodyTimeoutMs).toBe(8_000);
    expect(
      new Webhooks({ secret: SECRET, bodyTimeoutMs: false, deliveryTimeoutMs: false }).bodyTimeoutMs,
    ).toBeUndefined();
  });
});

describe('claim tokens: a run acts only on its own claim', () => {
  it('run 1 outlives its claim, delivery 2 claims, run 1 fails: delivery 3 still answers 409', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ inFlightTtlMs: 1000, now: () => now });
    const { webhooks } = setup({ store, handlerTimeoutMs: false });
    const gates = [deferred(), deferred()];
    let runs = 0;
    webhooks.on('image.created', async () => {
      const gate = gates[runs++];
      await gate?.promise;
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });

    const run1 = webhooks.handle(delivery);
    await until(() => runs === 1, 'run 1 to start');
    now += 1001; // run 1's claim expired
    const run2 = webhooks.handle(delivery);
    await until(() => runs === 2, 'run 2 to start');
    gates[0]?.reject(new Error('run 1 failed'));
    expect((await run1).status).toBe(500);

    const third = await webhooks.handle(delivery);
    expect(third.status).toBe(409);
    expect(runs).toBe(2);

    gates[1]?.resolve();
    expect((await run2).status).toBe(200);
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs).toBe(2);
  });

  it('passes one token per claim to claim, complete and release; a store written without tokens still works', async () => {
    const calls: string[][] = [];
    const seen = new Map<string, string>();
    const tokenStore: IdempotencyStore = {
      async claim(id, token) {
        calls.push(['claim', id, token]);
        return seen.has(id) ? 'completed' : 'claimed';
      },
      async complete(id, token) {
        calls.push(['complete', id, token]);
        seen.set(id, token);
      },
      async release(id, token) {
        calls.push(['release', id, token]);
      },
    };
    const { webhooks } = setup({ store: tokenStore });
    let fail = true;
    webhooks.on('image.created', () => {
      if (fail) throw new Error('once');
    });
    const a = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    expect((await webhooks.handle(a)).status).toBe(500);
    fail = false;
    expect((await webhooks.handle(a)).status).toBe(200);
    const [c1, r1, c2, d2] = calls;
    expect([c1?.[0], r1?.[0], c2?.[0], d2?.[0]]).toEqual(['claim', 'release', 'claim', 'complete']);
    expect(r1?.[2]).toBe(c1?.[2]);
    expect(d2?.[2]).toBe(c2?.[2]);
    expect(c1?.[2]).not.toBe(c2?.[2]);
    expect(c1?.[2]).toMatch(/^[\x21-\x7e]{1,64}$/);

    // The contract's one-argument store.
    const ids = new Set<string>();
    const legacy = {
      claim: async (id: string) => (ids.has(id) ? ('completed' as const) : ('claimed' as const)),
      complete: async (id: string) => void ids.add(id),
      release: async (_id: string) => {},
    };
    const old = setup({ store: legacy });
    let runs = 0;
    old.webhooks.on('image.created', () => void runs++);
    expect((await old.webhooks.handle(a)).status).toBe(200);
    expect((await old.webhooks.handle(a)).status).toBe(200);
    expect(runs).toBe(1);
  });
});
