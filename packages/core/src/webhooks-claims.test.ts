// How long a run holds its event's claim (issue 24): renewed from the start of the run whatever
// inFlightTtlMs and handlerTimeoutMs are, and released once maxClaimMs has passed for handlers that
// never settle. One time budget per delivery (deliveryTimeoutMs), counted from handle()'s call.
import { describe, it, vi } from 'vitest';
import {
  type IdempotencyStore,
  MemoryStore,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_claims_test_9f8e7d';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

function setup(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const errors: WebhookVerificationError[] = [];
  webhooks.onError((error) => void errors.push(error));
  return { webhooks, errors };
}

const code = (body: string) => (JSON.parse(body) as { error?: { code: string } }).error?.code;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Concurrently (each test its own Webhooks and store): the tests wait on their own timers, and the
// margins of those that time an answer are a busy machine's.

describe.concurrent('claim renewal from the start of the run', () => {
  it('a claim TTL far below handlerTimeoutMs: a retry while the handler runs still answers 409, and the run completes', async ({
    expect,
  }) => {
    // inFlightTtlMs (600 ms) < 1.5 × handlerTimeoutMs (5 s): before, nothing renewed the claim
    // until the handler deadline, so it expired and a retry ran the event beside the first run.
    // (Renewed every 200 ms: a busy machine's late timers stay well inside the TTL.)
    const store = new MemoryStore({ inFlightTtlMs: 600 });
    const { webhooks, errors } = setup({ store, handlerTimeoutMs: 5_000 });
    const gate = deferred();
    let runs = 0;
    let running = 0;
    let most = 0;
    webhooks.on('image.created', async () => {
      runs++;
      most = Math.max(most, ++running);
      try {
        await gate.promise;
      } finally {
        running--;
      }
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const first = webhooks.handle(delivery);
    await vi.waitFor(() => expect(runs).toBe(1), { timeout: 5_000 });
    await sleep(2_500); // four claim TTLs
    const retry = await webhooks.handle(delivery);
    expect(retry.status).toBe(409);
    expect(runs).toBe(1);
    expect(most).toBe(1);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs).toBe(1);
    expect(errors.map((e) => e.code)).toEqual(['IN_FLIGHT']);
  });

  it('with handlerTimeoutMs: false the claim is renewed too', async ({ expect }) => {
    const store = new MemoryStore({ inFlightTtlMs: 600 });
    const { webhooks } = setup({ store, handlerTimeoutMs: false, deliveryTimeoutMs: false });
    const gate = deferred();
    let runs = 0;
    webhooks.on('image.created', async () => {
      runs++;
      await gate.promise;
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const first = webhooks.handle(delivery);
    await vi.waitFor(() => expect(runs).toBe(1), { timeout: 5_000 });
    await sleep(2_500);
    expect((await webhooks.handle(delivery)).status).toBe(409);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect(runs).toBe(1);
  });

  it('renews a custom store with extend() while the handler runs, and stops once it settles', async ({ expect }) => {
    const calls: string[] = [];
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: async () => void calls.push('complete'),
      release: async () => void calls.push('release'),
      extend: async () => {
        calls.push('extend');
        return true;
      },
      inFlightTtlMs: 30,
    };
    const { webhooks } = setup({ store, handlerTimeoutMs: 5_000 });
    const gate = deferred();
    webhooks.on('image.created', () => gate.promise);
    const answer = webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    await vi.waitFor(() => expect(calls.filter((c) => c === 'extend').length).toBeGreaterThanOrEqual(2), {
      timeout: 5_000,
    });
    gate.resolve();
    expect((await answer).status).toBe(200);
    const settled = calls.length;
    await sleep(100);
    expect(calls.slice(settled)).toEqual([]);
    expect(calls.at(-1)).toBe('complete');
  });
});

describe.concurrent('when renewing fails', () => {
  function renewing(extend: () => Promise<boolean>) {
    let extends_ = 0;
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: async () => {},
      release: async () => {},
      extend: () => {
        extends_++;
        return extend();
      },
      inFlightTtlMs: 30,
    };
    return { store, calls: () => extends_ };
  }

  it('a lost claim (extend answers false) is told to onError once, and renewing stops', async ({ expect }) => {
    const { store, calls } = renewing(async () => false);
    const { webhooks, errors } = setup({ store, handlerTimeoutMs: 5_000 });
    const gate = deferred();
    webhooks.on('image.created', () => gate.promise);
    const answer = webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']), { timeout: 5_000 });
    expect(errors[0]?.message).toMatch(/was lost while its handlers ran/);
    const after = calls();
    await sleep(100);
    expect(calls()).toBe(after);
    gate.resolve();
    expect((await answer).status).toBe(200);
  });

  it('a store that fails to renew is told once and renewing goes on (it may be back next time)', async ({ expect }) => {
    const { store, calls } = renewing(async () => {
      throw new Error('redis away');
    });
    const { webhooks, errors } = setup({ store, handlerTimeoutMs: 5_000 });
    const gate = deferred();
    webhooks.on('image.created', () => gate.promise);
    const answer = webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    await vi.waitFor(() => expect(calls()).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
    expect(errors[0]?.message).toMatch(/could not be renewed while its handlers ran; retrying/);
    expect((errors[0]?.cause as Error | undefined)?.message).toBe('redis away');
    gate.resolve();
    expect((await answer).status).toBe(200);
  });
});

describe.concurrent('a run that never settles: maxClaimMs', () => {
  it('releases the claim after maxClaimMs, tells onError CLAIM_RELEASED, and the next retry runs the event', async ({
    expect,
  }) => {
    // maxClaimMs leaves a busy machine time for the second delivery before the bound.
    const { webhooks, errors } = setup({ handlerTimeoutMs: 30, maxClaimMs: 2_000 });
    let runs = 0;
    const never = new Promise<void>(() => {});
    webhooks.on('image.created', () => {
      runs++;
      return runs === 1 ? never : undefined;
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const first = await webhooks.handle(delivery);
    expect(first.status).toBe(503);
    expect(code(first.body)).toBe('HANDLER_TIMEOUT');
    // Before the bound: the claim holds.
    expect((await webhooks.handle(delivery)).status).toBe(409);
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('CLAIM_RELEASED'), { timeout: 10_000 });
    const released = errors.find((e) => e.code === 'CLAIM_RELEASED');
    expect(released?.message).toMatch(/maxClaimMs \(2000 ms\)/);
    expect(released?.message).toMatch(/may still be running/);
    const retry = await webhooks.handle(delivery);
    expect(retry.status).toBe(200);
    expect(runs).toBe(2);
    expect((await webhooks.handle(delivery)).status).toBe(200);
    expect(runs).toBe(2);
  });

  it('with no answer deadline, the waiting request is answered 503 HANDLER_TIMEOUT when the claim is released', async ({
    expect,
  }) => {
    const { webhooks, errors } = setup({ handlerTimeoutMs: false, deliveryTimeoutMs: false, maxClaimMs: 100 });
    webhooks.on('image.created', () => new Promise<void>(() => {}));
    const answer = await webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    expect(answer.status).toBe(503);
    expect(code(answer.body)).toBe('HANDLER_TIMEOUT');
    expect(errors.map((e) => e.code).sort()).toEqual(['CLAIM_RELEASED', 'HANDLER_TIMEOUT']);
  });

  it('a handler that settles after the release records the event, so later retries are duplicates', async ({
    expect,
  }) => {
    const { webhooks, errors } = setup({ handlerTimeoutMs: 20, maxClaimMs: 60 });
    const gate = deferred();
    let runs = 0;
    webhooks.on('image.created', () => {
      runs++;
      return gate.promise;
    });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    expect((await webhooks.handle(delivery)).status).toBe(503);
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('CLAIM_RELEASED'), { timeout: 5_000 });
    gate.resolve();
    // The run records the event in the microtasks after its handler settles: one macrotask later it is done.
    await new Promise((resolve) => setImmediate(resolve));
    const retry = await webhooks.handle(delivery);
    expect(JSON.parse(retry.body)).toEqual({ received: true, duplicate: true });
    expect(runs).toBe(1);
  });

  it('defaults to 15 minutes; false keeps the claim until the handlers end; a bad value throws', ({ expect }) => {
    expect(() => new Webhooks({ secret: SECRET, maxClaimMs: false })).not.toThrow();
    expect(() => new Webhooks({ secret: SECRET, maxClaimMs: 0 })).toThrow(/pixhook: maxClaimMs must be a positive/);
    expect(() => new Webhooks({ secret: SECRET, maxClaimMs: '900000' as never })).toThrow(/maxClaimMs/);
  });
});

describe.concurrent('one time budget per delivery: deliveryTimeoutMs', () => {
  it('a slow body plus a hung handler is answered when the budget ends, not body time + handlerTimeoutMs', async ({
    expect,
  }) => {
    // Without the budget: 400 ms of body + handlerTimeoutMs (8 s).
    const { webhooks, errors } = setup({ bodyTimeoutMs: 8_000, handlerTimeoutMs: 8_000, deliveryTimeoutMs: 600 });
    webhooks.on('image.created', () => new Promise<void>(() => {}));
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const started = performance.now();
    const answer = await webhooks.handle({
      ...delivery,
      body: async () => {
        await sleep(400);
        return delivery.body;
      },
    });
    const took = performance.now() - started;
    expect(answer.status).toBe(503);
    expect(code(answer.body)).toBe('HANDLER_TIMEOUT');
    expect(errors[0]?.message).toMatch(/deliveryTimeoutMs \(600 ms\)/);
    expect(took).toBeGreaterThanOrEqual(580);
    // Far below 8.4 s; the margin is a busy machine's.
    expect(took).toBeLessThan(5_000);
  });

  it('the body deadline is the budget when the budget is shorter', async ({ expect }) => {
    const { webhooks } = setup({ bodyTimeoutMs: 5_000, deliveryTimeoutMs: 250 });
    let given: number | undefined;
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    await webhooks.handle({
      ...delivery,
      body: (_limit, timeoutMs) => {
        given = timeoutMs;
        return delivery.body;
      },
    });
    expect(given).toBe(250);
    expect(webhooks.bodyTimeoutMs).toBe(250);
  });

  it('a completion slower than the budget does not hold the answer: 200 when the budget ends', async ({ expect }) => {
    const gate = deferred();
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: () => gate.promise,
      release: async () => {},
    };
    const { webhooks } = setup({ store, deliveryTimeoutMs: 200 });
    webhooks.on('image.created', async () => {});
    const started = performance.now();
    const answer = await webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    expect(answer.status).toBe(200);
    // The completion never ends before the answer: any answer proves it; the margin is a busy machine's.
    expect(performance.now() - started).toBeLessThan(5_000);
    gate.resolve();
  });

  it('a release still on its way when the budget ends does not hold the 500', async ({ expect }) => {
    const gate = deferred();
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: async () => {},
      release: () => gate.promise,
    };
    const { webhooks, errors } = setup({ store, deliveryTimeoutMs: 200 });
    webhooks.on('image.created', () => {
      throw new Error('handler failed');
    });
    const started = performance.now();
    const answer = await webhooks.handle(createSignedRequest(createTestEvent('image.created'), { secret: SECRET }));
    expect(answer.status).toBe(500);
    expect(code(answer.body)).toBe('HANDLER_FAILED');
    expect(performance.now() - started).toBeLessThan(3_000);
    // Reported once, when the release is done.
    expect(errors).toEqual([]);
    gate.resolve();
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toEqual(['HANDLER_FAILED']), { timeout: 5_000 });
  });

  it('queued mode: the write to the queue gets what is left of the budget when that is shorter', async ({ expect }) => {
    const queue = { enqueue: () => new Promise<never>(() => {}), enqueueTimeoutMs: 5_000 };
    const { webhooks, errors } = setup({ queue, deliveryTimeoutMs: 300 });
    const delivery = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const started = performance.now();
    const answer = await webhooks.handle({
      ...delivery,
      body: async () => {
        await sleep(100);
        return delivery.body;
      },
    });
    expect(answer.status).toBe(503);
    expect(code(answer.body)).toBe('QUEUE_UNAVAILABLE');
    expect(errors[0]?.message).toMatch(/within what was left of deliveryTimeoutMs/);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('defaults to 8 s; false turns it off; a bad value throws', ({ expect }) => {
    expect(() => new Webhooks({ secret: SECRET, deliveryTimeoutMs: false })).not.toThrow();
    expect(() => new Webhooks({ secret: SECRET, deliveryTimeoutMs: -5 })).toThrow(
      /pixhook: deliveryTimeoutMs must be a positive/,
    );
    expect(new Webhooks({ secret: SECRET, bodyTimeoutMs: 60_000 }).bodyTimeoutMs).toBe(8_000);
  });
});
