/**
 * Handlers that fail alone (`on(type, { id }, handler)`): each named handler has its own record
 * that it succeeded, so a retry runs only the named handlers not done yet; unnamed handlers keep
 * their behaviour (all or nothing, the first failure stops the rest). Inline with a MemoryStore,
 * transactional with a small transactional database, queued through `process()` with a queue that
 * keeps jobs in a Map. `@pixhook/redis`, `@pixhook/postgres` and the engines run the same paths on
 * real servers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BegunEvent,
  type EventTransactions,
  type QueuedDelivery,
  type QueuedRun,
  Webhooks,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_named_handlers_4d5e';

type Answer = { status: number; body: string };

/** Failures are expected here: heard (so not logged) by a listener that keeps nothing. */
function quiet<T extends Webhooks>(webhooks: T): T {
  webhooks.onError(() => {});
  return webhooks;
}

function deliver(webhooks: Webhooks, event = createTestEvent('image.created', { id: 'img_1' })) {
  const request = createSignedRequest(event, { secret: SECRET });
  return async (): Promise<Answer> => {
    const { status, body } = await webhooks.handle({ method: 'POST', ...request });
    return { status, body };
  };
}

/** A handler that fails its first `failures` runs, then succeeds; counts its runs. */
function flaky(failures: number, async = false) {
  const handler = Object.assign(
    () => {
      handler.runs += 1;
      const fail = handler.runs <= failures;
      if (!async) {
        if (fail) throw new Error(`failure ${handler.runs}`);
        handler.successes += 1;
        return undefined;
      }
      return Promise.resolve().then(() => {
        if (fail) throw new Error(`failure ${handler.runs}`);
        handler.successes += 1;
      });
    },
    { runs: 0, successes: 0 },
  );
  return handler;
}

describe('named handlers, inline with a store', () => {
  it('a retry runs only the named handler that failed, and 200 comes once all are done', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET }));
    const thumbnails = flaky(0);
    const billing = flaky(1);
    webhooks.on('image.created', { id: 'thumbnails' }, thumbnails);
    webhooks.on('image.created', { id: 'billing' }, billing);
    const send = deliver(webhooks);
    expect((await send()).status).toBe(500);
    expect([thumbnails.runs, billing.runs]).toEqual([1, 1]);
    expect((await send()).status).toBe(200);
    expect([thumbnails.runs, billing.runs]).toEqual([1, 2]);
    // Done: a later delivery is a duplicate and runs nothing.
    expect(JSON.parse((await send()).body)).toEqual({ received: true, duplicate: true });
    expect([thumbnails.runs, billing.runs]).toEqual([1, 2]);
  });

  it('a named handler that fails does not stop the others; an unnamed one still stops the rest', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET }));
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    const first = flaky(1);
    const plain = flaky(0);
    const second = flaky(1, true);
    const last = flaky(0);
    webhooks.on('image.created', { id: 'first' }, first);
    webhooks.on('image.created', plain);
    webhooks.on('image.created', { id: 'second' }, second);
    webhooks.on('image.created', { id: 'last' }, last);
    const send = deliver(webhooks);
    const answer = await send();
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.body).error.code).toBe('HANDLER_FAILED');
    // Every handler ran; both named failures were told.
    expect([first.runs, plain.runs, second.runs, last.runs]).toEqual([1, 1, 1, 1]);
    expect(errors.map((error) => (error.cause as Error).message)).toEqual(['failure 1', 'failure 1']);
    expect((await send()).status).toBe(200);
    // The unnamed handler runs on every attempt, as it always did; `last` was done.
    expect([first.runs, plain.runs, second.runs, last.runs]).toEqual([2, 2, 2, 1]);

    const stopper = quiet(new Webhooks({ secret: SECRET }));
    const failing = flaky(1);
    const after = flaky(0);
    stopper.on('image.created', failing);
    stopper.on('image.created', { id: 'after' }, after);
    expect((await deliver(stopper)()).status).toBe(500);
    expect(after.runs).toBe(0);
  });

  it('tells a named failure that comes before an unnamed one too', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET }));
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(`${error.code}: ${(error.cause as Error).message}`));
    webhooks.on('image.created', { id: 'named' }, () => {
      throw new Error('named');
    });
    webhooks.on('image.created', () => {
      throw new Error('plain');
    });
    expect((await deliver(webhooks)()).status).toBe(500);
    expect(errors.sort()).toEqual(['HANDLER_FAILED: named', 'HANDLER_FAILED: plain']);
  });

  it('without a store (store: false) named handlers run on every delivery, as unnamed ones do', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET, store: false }));
    const named = flaky(0);
    webhooks.on('image.created', { id: 'named' }, named);
    const send = deliver(webhooks);
    await send();
    await send();
    expect(named.runs).toBe(2);
  });

  it('keeps a record per tenant and per id: one function under two ids runs twice', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET }));
    const handler = flaky(0);
    webhooks.on('image.created', { id: 'one' }, handler);
    webhooks.on('image.created', { id: 'two' }, handler);
    expect((await deliver(webhooks)()).status).toBe(200);
    expect(handler.runs).toBe(2);
  });

  it('checks ids: letters, digits, _ - . up to 64, unique per type', () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET }));
    const handler = () => {};
    for (const id of ['', 'a b', 'a#b', 'x'.repeat(65), 5, null]) {
      expect(() => webhooks.on('image.created', { id } as never, handler)).toThrow(/id must be 1 to 64 letters/);
    }
    webhooks.on(['image.created', 'image.deleted'], { id: 'thumbnails' }, handler);
    expect(() => webhooks.on('image.deleted', { id: 'thumbnails' }, handler)).toThrow(/already has that id/);
    // Another type may reuse it.
    expect(() => webhooks.on('quota.warned', { id: 'thumbnails' }, handler)).not.toThrow();
    expect(() => webhooks.on('image.created', { ID: 'x' } as never, handler)).toThrow(/unknown option "ID"/);
  });

  it('answers 503 and runs nothing more when the store fails on a named handler', async () => {
    const failing = {
      claim: async (id: string) => {
        if (id.includes('#')) throw new Error('store down');
        return 'claimed' as const;
      },
      complete: async () => {},
      release: async () => {},
    };
    const webhooks = quiet(new Webhooks({ secret: SECRET, store: failing }));
    const named = flaky(0);
    webhooks.on('image.created', { id: 'named' }, named);
    const answer = await deliver(webhooks)();
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(named.runs).toBe(0);
  });

  it('property: random failures and redeliveries run every named handler to success exactly once', async () => {
    const handlerSpec = fc.record({
      named: fc.boolean(),
      failures: fc.integer({ min: 0, max: 3 }),
      async: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(handlerSpec, { minLength: 1, maxLength: 5 }), async (specs) => {
        const webhooks = quiet(new Webhooks({ secret: SECRET }));
        const handlers = specs.map((spec, i) => {
          const handler = flaky(spec.failures, spec.async);
          if (spec.named) webhooks.on('image.created', { id: `h${i}` }, handler);
          else webhooks.on('image.created', handler);
          return handler;
        });
        const send = deliver(webhooks);
        let attempts = 0;
        let status = 0;
        // Each handler fails at most 3 times: the run ends within 4 attempts per handler.
        while (status !== 200 && attempts < 4 * specs.length + 1) {
          status = (await send()).status;
          attempts += 1;
        }
        expect(status).toBe(200);
        specs.forEach((spec, i) => {
          const handler = handlers[i] as ReturnType<typeof flaky>;
          // Named: it never runs again once it succeeded.
          if (spec.named) expect(handler.successes).toBe(1);
          if (spec.named) expect(handler.runs).toBe(spec.failures + 1);
          // Unnamed: it succeeded at least once, on the last attempt at the latest.
          else expect(handler.successes).toBeGreaterThanOrEqual(1);
        });
        // The last attempt ran every unnamed handler successfully (all or nothing, as today).
        const runsBefore = handlers.map((handler) => handler.runs);
        expect(JSON.parse((await send()).body).duplicate).toBe(true);
        expect(handlers.map((handler) => handler.runs)).toEqual(runsBefore);
      }),
      { numRuns: 150 },
    );
  });
});

/** A small transactional database: rows staged per transaction, kept once committed, a lock per key. */
class MapDatabase implements EventTransactions<{ key: string; rows: string[] }> {
  readonly rows: string[] = [];
  readonly processed = new Set<string>();
  readonly locked = new Set<string>();
  readonly begun: string[] = [];

  async begin(key: string): Promise<BegunEvent<{ key: string; rows: string[] }>> {
    this.begun.push(key);
    if (this.locked.has(key)) return { state: 'in-flight' };
    if (this.processed.has(key)) return { state: 'completed' };
    this.locked.add(key);
    const transaction = { key, rows: [] as string[] };
    return {
      state: 'claimed',
      transaction,
      commit: async () => {
        this.locked.delete(key);
        this.rows.push(...transaction.rows);
        this.processed.add(key);
      },
      rollback: async () => {
        this.locked.delete(key);
      },
    };
  }
}

describe('named handlers, transactional', () => {
  it('runs each named handler in a transaction of its own, committed when it succeeds', async () => {
    const database = new MapDatabase();
    const webhooks = quiet(new Webhooks({ secret: SECRET, transactions: database }));
    let billingFails = true;
    const seen: string[] = [];
    webhooks.on('image.created', (_event, { transaction }) => {
      seen.push(transaction.key);
      transaction.rows.push('plain');
    });
    webhooks.on('image.created', { id: 'thumbnails' }, (_event, { transaction }) => {
      seen.push(transaction.key);
      transaction.rows.push('thumbnail');
    });
    webhooks.on('image.created', { id: 'billing' }, (_event, { transaction }) => {
      seen.push(transaction.key);
      transaction.rows.push('invoice');
      if (billingFails) throw new Error('billing down');
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    const send = deliver(webhooks, event);
    expect((await send()).status).toBe(500);
    // The thumbnail committed on its own; the event's transaction and billing's rolled back.
    expect(database.rows).toEqual(['thumbnail']);
    expect(seen).toEqual([event.id, `${event.id}#thumbnails`, `${event.id}#billing`]);
    billingFails = false;
    expect((await send()).status).toBe(200);
    expect(database.rows.sort()).toEqual(['invoice', 'plain', 'thumbnail']);
    expect((await send()).status).toBe(200);
    expect(database.rows).toHaveLength(3);
  });
});

/** A queue that keeps jobs by `deliveryKey`-like keys, as an engine would. */
function mapQueue() {
  const jobs = new Map<string, QueuedDelivery>();
  return {
    jobs,
    async enqueue(delivery: QueuedDelivery) {
      const key = `${delivery.event.id}${delivery.handler === undefined ? '' : `#${delivery.handler}`}`;
      if (!jobs.has(key)) jobs.set(key, delivery);
    },
  };
}

function run(attempt = 1): QueuedRun {
  return { engine: 'test', jobId: 'job', attempt, maxAttempts: 3, queuedAt: Date.now() };
}

describe('named handlers, queued', () => {
  const event = createTestEvent('image.created', { id: 'img_1' });
  const delivery: QueuedDelivery = { event, deliveryId: 'dlv_1', timestamp: Math.floor(Date.now() / 1000) };

  it("an event's job writes one job per named handler and runs the unnamed ones; each handler job runs its handler alone", async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET, queue: { enqueue: async () => {} } }));
    const plain = flaky(0);
    const thumbnails = flaky(0);
    const billing = flaky(1);
    webhooks.on('image.created', plain);
    webhooks.on('image.created', { id: 'thumbnails' }, thumbnails);
    webhooks.on('image.created', { id: 'billing' }, billing);
    const queue = mapQueue();
    await webhooks.process(delivery, run(), { queue });
    expect([plain.runs, thumbnails.runs, billing.runs]).toEqual([1, 0, 0]);
    expect([...queue.jobs.keys()].sort()).toEqual([`${event.id}#billing`, `${event.id}#thumbnails`]);
    expect(queue.jobs.get(`${event.id}#billing`)).toMatchObject({ event, deliveryId: 'dlv_1', handler: 'billing' });
    // The event's job run again writes no job twice.
    await webhooks.process(delivery, run(2), { queue });
    expect(queue.jobs.size).toBe(2);
    await webhooks.process(queue.jobs.get(`${event.id}#thumbnails`) as QueuedDelivery, run(), { queue });
    await expect(
      webhooks.process(queue.jobs.get(`${event.id}#billing`) as QueuedDelivery, run(), { queue }),
    ).rejects.toThrow('failure 1');
    await webhooks.process(queue.jobs.get(`${event.id}#billing`) as QueuedDelivery, run(2), { queue });
    expect([plain.runs, thumbnails.runs, billing.runs]).toEqual([2, 1, 2]);
  });

  it('without the engine queue, named handlers run in the event job; a handler job this worker lacks fails', async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET, queue: { enqueue: async () => {} } }));
    const named = flaky(0);
    webhooks.on('image.created', { id: 'named' }, named);
    await webhooks.process(delivery, run());
    expect(named.runs).toBe(1);
    await expect(webhooks.process({ ...delivery, handler: 'gone' }, run())).rejects.toThrow(
      /no handler with id "gone" for image\.created/,
    );
  });

  it("fails the event's job when a named handler's job cannot be written", async () => {
    const webhooks = quiet(new Webhooks({ secret: SECRET, queue: { enqueue: async () => {} } }));
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.code));
    const plain = flaky(0);
    webhooks.on('image.created', plain);
    webhooks.on('image.created', { id: 'named' }, () => {});
    const down = {
      enqueue: async () => {
        throw new Error('redis down');
      },
    };
    await expect(webhooks.process(delivery, run(), { queue: down })).rejects.toMatchObject({
      code: 'QUEUE_UNAVAILABLE',
    });
    expect(errors).toEqual(['QUEUE_UNAVAILABLE']);
    expect(plain.runs).toBe(0);
  });

  it('a transactional worker runs a handler job in the transaction of its own key', async () => {
    const database = new MapDatabase();
    const webhooks = quiet(
      new Webhooks({ secret: SECRET, queue: { enqueue: async () => {} }, transactions: database }),
    );
    webhooks.on('image.created', { id: 'named' }, (_event, { transaction }) => {
      transaction.rows.push(transaction.key);
    });
    await webhooks.process({ ...delivery, handler: 'named' }, run());
    expect(database.rows).toEqual([`${event.id}#named`]);
    // Run again (a job retried after its commit): the transaction says completed, nothing runs.
    await webhooks.process({ ...delivery, handler: 'named' }, run(2));
    expect(database.rows).toHaveLength(1);
  });
});
