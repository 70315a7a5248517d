/**
 * Queued mode through the core seam, with a small queue written for these tests (a whole
 * `WebhookQueue`, kept in a Map: what the seam promises does not depend on the engine). The engines'
 * own tests (`@pixhook/bullmq`) run the same paths on a real Redis, over every adapter.
 */
import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  type QueuedDelivery,
  type QueuedRun,
  type WebhookQueue,
  Webhooks,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_queue_seam_1a2b';

/** Keeps one job per event id, like a real engine; `fail`/`hang` stand for an engine that is down. */
class MapQueue implements WebhookQueue {
  readonly jobs = new Map<string, QueuedDelivery>();
  writes = 0;
  fail: unknown;
  hang = false;
  enqueue(delivery: QueuedDelivery): Promise<void> {
    this.writes += 1;
    if (this.hang) return new Promise(() => {});
    if (this.fail !== undefined) return Promise.reject(this.fail);
    if (!this.jobs.has(delivery.event.id)) this.jobs.set(delivery.event.id, structuredClone(delivery));
    return Promise.resolve();
  }
}

function post(
  webhooks: Webhooks,
  event: ReturnType<typeof createTestEvent<string>> = createTestEvent('image.created'),
) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return webhooks.handle({ method: 'POST', headers, body, request: { from: 'test' } });
}

function run(attempt: number, maxAttempts = 3): QueuedRun {
  return { engine: 'map', jobId: 'job-1', attempt, maxAttempts, queuedAt: 1_700_000_000_000 };
}

describe('queued mode: the request', () => {
  it('answers 202 once the queue confirmed the write, and runs no handler in the request', async () => {
    const queue = new MapQueue();
    const webhooks = new Webhooks({ secret: SECRET, queue });
    const ran: string[] = [];
    webhooks.onAny((event) => void ran.push(event.id));
    const event = createTestEvent('image.created', { id: 'img_1' });
    const answer = await post(webhooks, event);
    expect(answer.status).toBe(202);
    expect(JSON.parse(answer.body)).toEqual({ received: true, queued: true });
    expect(ran).toEqual([]);
    const job = queue.jobs.get(event.id);
    expect(job?.event).toEqual(event);
    expect(Object.keys(job ?? {}).sort()).toEqual(['deliveryId', 'event', 'secret', 'timestamp']);
    expect(job?.secret).toEqual({ index: 0 });
    expect(typeof job?.deliveryId).toBe('string');
    expect(job?.timestamp).toBeGreaterThan(1_700_000_000);
  });

  it('queues every verified event, known or not, with or without handlers here', async () => {
    const queue = new MapQueue();
    const webhooks = new Webhooks({ secret: SECRET, queue });
    for (const event of [createTestEvent('image.deleted'), createTestEvent('image.tagged.v2')]) {
      expect((await post(webhooks, event)).status).toBe(202);
    }
    expect(queue.jobs.size).toBe(2);
  });

  it('queues nothing for a request it refuses', async () => {
    const queue = new MapQueue();
    const webhooks = new Webhooks({ secret: SECRET, queue });
    const { headers, body } = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_other' });
    const answer = await webhooks.handle({ method: 'POST', headers, body });
    expect(answer.status).toBe(400);
    expect(queue.writes).toBe(0);
  });

  it.each([
    ['rejects', new Error('connection refused')],
    ['rejects with a non-Error', 'down'],
  ])('answers 503 QUEUE_UNAVAILABLE when the queue %s, and tells onError with the cause', async (_, failure) => {
    const queue = new MapQueue();
    queue.fail = failure;
    const webhooks = new Webhooks({ secret: SECRET, queue });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => void errors.push(error));
    const answer = await post(webhooks);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('QUEUE_UNAVAILABLE');
    expect(answer.body).not.toContain('connection refused');
    expect(errors.map((error) => error.code)).toEqual(['QUEUE_UNAVAILABLE']);
    expect(errors[0]?.cause).toBe(queue.fail);
  });

  it('answers 503 when enqueue throws synchronously', async () => {
    const webhooks = new Webhooks({
      secret: SECRET,
      queue: {
        enqueue() {
          throw new Error('not connected');
        },
      },
    });
    webhooks.onError(() => {});
    expect((await post(webhooks)).status).toBe(503);
  });

  it('answers 503 within handlerTimeoutMs when the queue never confirms; a later retry is still queued once', async () => {
    const queue = new MapQueue();
    queue.hang = true;
    const webhooks = new Webhooks({ secret: SECRET, queue, handlerTimeoutMs: 50 });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(`${error.code}: ${error.message}`));
    const event = createTestEvent('image.created');
    const started = performance.now();
    const answer = await post(webhooks, event);
    // The queue never confirms: any answer proves the deadline (the message says which); the margin
    // is a busy machine's.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(answer.status).toBe(503);
    expect(errors).toEqual([expect.stringMatching(/^QUEUE_UNAVAILABLE: .*handlerTimeoutMs \(50 ms\)/)]);
    queue.hang = false;
    expect((await post(webhooks, event)).status).toBe(202);
    expect((await post(webhooks, event)).status).toBe(202);
    expect(queue.jobs.size).toBe(1);
  });
});

describe("queued mode: the queue's own write deadline", () => {
  it("answers 503 at the queue's enqueueTimeoutMs when it is shorter than handlerTimeoutMs", async () => {
    const queue = Object.assign(new MapQueue(), { enqueueTimeoutMs: 40 });
    queue.hang = true;
    const webhooks = new Webhooks({ secret: SECRET, queue });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.message));
    const started = performance.now();
    expect((await post(webhooks)).status).toBe(503);
    // Before handlerTimeoutMs (5 s), with a busy machine's margin; the message says which deadline.
    expect(performance.now() - started).toBeLessThan(4_000);
    expect(errors).toEqual([expect.stringContaining("the queue's enqueueTimeoutMs (40 ms)")]);
  });

  it('refuses an enqueueTimeoutMs that is not a positive whole number', () => {
    for (const enqueueTimeoutMs of [0, -1, 1.5, '100']) {
      const queue = Object.assign(new MapQueue(), { enqueueTimeoutMs });
      expect(() => new Webhooks({ secret: SECRET, queue: queue as WebhookQueue })).toThrow(/enqueueTimeoutMs/);
    }
  });
});

describe('queued mode: options', () => {
  it('refuses a queue without enqueue(); takes a store beside a queue (for the ordering marks)', () => {
    expect(() => new Webhooks({ secret: SECRET, queue: {} as WebhookQueue })).toThrow(/queue must have an enqueue/);
    expect(() => new Webhooks({ secret: SECRET, queue: new MapQueue(), store: new MemoryStore() })).not.toThrow();
    expect(() => new Webhooks({ secret: SECRET, queue: new MapQueue(), store: false })).not.toThrow();
  });

  it('shows the queue in console.log, never the secret', () => {
    const shown = String(
      (new Webhooks({ secret: SECRET, queue: new MapQueue() }) as unknown as Record<symbol, () => string>)[
        Symbol.for('nodejs.util.inspect.custom')
      ]?.(),
    );
    expect(shown).toContain('queue: MapQueue');
    expect(shown).not.toContain(SECRET);
  });
});

describe('queued mode: webhooks.process() in a worker', () => {
  it('runs the handlers of the type and onAny in order, with context.job and no request', async () => {
    const webhooks = new Webhooks({ secret: SECRET, queue: new MapQueue() });
    const seen: unknown[] = [];
    webhooks.on('image.created', (event, context) => void seen.push(['on', event.id, context]));
    webhooks.onAny((event) => void seen.push(['any', event.id]));
    webhooks.on('image.deleted', () => void seen.push('never'));
    const event = createTestEvent('image.created');
    await webhooks.process({ event, deliveryId: 'dlv_1', timestamp: 1_700_000_000 }, run(2));
    expect(seen).toEqual([
      ['on', event.id, { deliveryId: 'dlv_1', timestamp: 1_700_000_000, request: undefined, job: run(2) }],
      ['any', event.id],
    ]);
  });

  it("rejects with the handler's own error after telling onError which attempt failed", async () => {
    const webhooks = new Webhooks({ secret: SECRET, queue: new MapQueue() });
    const failure = new Error('billing API down');
    const later: string[] = [];
    webhooks.on('image.created', () => {
      throw failure;
    });
    webhooks.onAny(() => void later.push('ran'));
    const told: { code: string; message: string; attempt?: number; cause: unknown }[] = [];
    webhooks.onError((error, context) =>
      told.push({ code: error.code, message: error.message, attempt: context.job?.attempt, cause: error.cause }),
    );
    const delivery = { event: createTestEvent('image.created'), deliveryId: 'dlv_2', timestamp: 1_700_000_000 };
    await expect(webhooks.process(delivery, run(1))).rejects.toBe(failure);
    await expect(webhooks.process(delivery, run(3))).rejects.toBe(failure);
    expect(later).toEqual([]);
    expect(told).toEqual([
      {
        code: 'HANDLER_FAILED',
        message: expect.stringMatching(/attempt 1 of 3; the queue will run/),
        attempt: 1,
        cause: failure,
      },
      {
        code: 'HANDLER_FAILED',
        message: expect.stringMatching(/attempt 3 of 3; .*dead letter/),
        attempt: 3,
        cause: failure,
      },
    ]);
  });

  it('waits for async handlers one after another', async () => {
    const webhooks = new Webhooks({ secret: SECRET, queue: new MapQueue() });
    const order: string[] = [];
    webhooks.onAny(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      order.push('first');
    });
    webhooks.onAny(() => void order.push('second'));
    await webhooks.process({ event: createTestEvent('quota.warned'), deliveryId: 'd', timestamp: 1 }, run(1));
    expect(order).toEqual(['first', 'second']);
  });

  it('refuses what is not a queued delivery, running nothing', async () => {
    const webhooks = new Webhooks({ secret: SECRET, queue: new MapQueue() });
    let ran = 0;
    webhooks.onAny(() => void ran++);
    for (const bad of [
      null,
      {},
      { event: { id: 'evt_1' }, deliveryId: 'd', timestamp: 1 },
      { event: createTestEvent('image.created'), deliveryId: 'd' },
    ]) {
      await expect(webhooks.process(bad as QueuedDelivery, run(1))).rejects.toThrow(/not a queued pixhook delivery/);
    }
    expect(ran).toBe(0);
  });

  it('logs a failed job with its attempt when nobody listens to onError', async () => {
    const webhooks = new Webhooks({ secret: SECRET, queue: new MapQueue() });
    webhooks.onAny(() => {
      throw new Error('boom');
    });
    const lines: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void lines.push(args);
    try {
      await webhooks
        .process({ event: createTestEvent('image.created'), deliveryId: 'dlv_9', timestamp: 1 }, run(2, 5))
        .catch(() => {});
    } finally {
      console.error = original;
    }
    expect(String(lines[0]?.[0])).toMatch(
      /^pixhook: HANDLER_FAILED \(image\.created evt_\w+, delivery dlv_9, job job-1, attempt 2 of 5\)/,
    );
  });
});
