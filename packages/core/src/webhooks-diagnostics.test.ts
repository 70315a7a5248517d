/**
 * What core publishes on `node:diagnostics_channel`, read by a real subscriber: the message of each
 * traced step, the order of its events, the trace context a subscriber stores with a queued job,
 * and that nothing of the secret, the signature or the body is in any message.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CHANNELS,
  type EnqueueMessage,
  type EventTransactions,
  type HandlerMessage,
  type JobMessage,
  type QueuedDelivery,
  type TransactionMessage,
  type WebhookQueue,
  Webhooks,
} from './index.js';
import { setWebCryptoOnly } from './protocol/crypto.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_diagnostics_5c6d';
const OLD_SECRET = 'whsec_diagnostics_old_7e8f';

type Name = keyof typeof CHANNELS;
interface Seen {
  channel: Name;
  event: 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error';
  message: Record<string, unknown>;
  /** The message as it was at that moment. */
  snapshot: Record<string, unknown>;
}

const unsubscribes: (() => void)[] = [];
afterEach(() => {
  for (const stop of unsubscribes.splice(0)) stop();
});

/** Subscribes to the channels named and records every event, in order. */
function listen(...names: Name[]): Seen[] {
  const seen: Seen[] = [];
  for (const name of names) {
    const channel = diagnostics_channel.tracingChannel(CHANNELS[name]);
    const record = (event: Seen['event']) => (message: unknown) => {
      const { parent: _parent, runInContext: _run, ...rest } = message as Record<string, unknown>;
      seen.push({ channel: name, event, message: message as Record<string, unknown>, snapshot: { ...rest } });
    };
    const handlers = {
      start: record('start'),
      end: record('end'),
      asyncStart: record('asyncStart'),
      asyncEnd: record('asyncEnd'),
      error: record('error'),
    };
    channel.subscribe(handlers);
    unsubscribes.push(() => channel.unsubscribe(handlers));
  }
  return seen;
}

function post(webhooks: Webhooks, event = createTestEvent('image.created'), secret = SECRET) {
  const request = createSignedRequest(event, { secret, deliveryId: 'dlv_diag_1' });
  return {
    request,
    answer: webhooks.handle({ method: 'POST', headers: request.headers, body: request.body, request: {} }),
  };
}

function ended(seen: Seen[], channel: Name): Record<string, unknown>[] {
  return seen.filter((s) => s.channel === channel && s.event === 'asyncEnd').map((s) => s.snapshot);
}

describe('diagnostics channels', () => {
  it('publish nothing and build nothing while nobody subscribes', () => {
    for (const name of Object.values(CHANNELS)) {
      expect(diagnostics_channel.tracingChannel(name).hasSubscribers).toBe(false);
    }
  });

  it('trace a delivery from start to answer, with the signed event, the matched secret and the estimated attempt', async () => {
    const seen = listen('delivery');
    const webhooks = new Webhooks({ secret: [SECRET, OLD_SECRET] });
    webhooks.on('image.created', () => {});
    const event = createTestEvent('image.created', { id: 'img_1' });
    const { answer } = post(webhooks, event, OLD_SECRET);
    expect((await answer).status).toBe(200);
    expect(seen.map((s) => s.event)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
    expect(seen[0]?.snapshot).toMatchObject({ mode: 'inline', deliveryId: undefined, status: undefined });
    const [done] = ended(seen, 'delivery');
    expect(done).toMatchObject({
      mode: 'inline',
      deliveryId: 'dlv_diag_1',
      eventType: 'image.created',
      eventId: event.id,
      created: event.created,
      secretIndex: 1,
      attempt: 1,
      status: 200,
      outcome: 'processed',
      code: undefined,
      lastChance: false,
    });
    expect(done?.verifyMs).toBeGreaterThanOrEqual(0);
    // Every message is one object from start to asyncEnd.
    expect(new Set(seen.map((s) => s.message)).size).toBe(1);
  });

  it('say duplicate, queued and the code of each refusal; a refusal carries no signed field', async () => {
    const seen = listen('delivery');
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', () => {});
    const event = createTestEvent('image.created');
    await post(webhooks, event).answer;
    await post(webhooks, event).answer;
    const forged = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_someone_else' });
    await webhooks.handle({ method: 'POST', headers: forged.headers, body: forged.body, request: {} });
    await webhooks.handle({ method: 'GET', headers: {}, body: '', request: {} });
    const outcomes = ended(seen, 'delivery').map(({ outcome, status, code, eventId }) => ({
      outcome,
      status,
      code,
      eventId,
    }));
    expect(outcomes).toEqual([
      { outcome: 'processed', status: 200, code: undefined, eventId: event.id },
      { outcome: 'duplicate', status: 200, code: undefined, eventId: event.id },
      { outcome: 'rejected', status: 400, code: 'SIGNATURE_MISMATCH', eventId: undefined },
      { outcome: 'rejected', status: 405, code: 'METHOD_NOT_ALLOWED', eventId: undefined },
    ]);
  });

  it('trace each handler as a child of its delivery, with its error, and keep a synchronous run synchronous', async () => {
    const seen = listen('delivery', 'handler');
    const webhooks = new Webhooks({ secret: SECRET });
    const failure = new Error('thumbnail service down');
    webhooks.on('image.created', function indexImage() {});
    webhooks.on('image.created', async function makeThumbnails() {
      throw failure;
    });
    webhooks.onError(() => {});
    const { answer } = post(webhooks);
    expect((await answer).status).toBe(500);
    const handlers = seen.filter((s) => s.channel === 'handler');
    const delivery = seen.find((s) => s.channel === 'delivery')?.message;
    expect(handlers.map((s) => `${s.snapshot.handlerName}:${s.event}`)).toEqual([
      'indexImage:start',
      'indexImage:end',
      'indexImage:asyncStart',
      'indexImage:asyncEnd',
      'makeThumbnails:start',
      'makeThumbnails:end',
      'makeThumbnails:error',
      'makeThumbnails:asyncStart',
      'makeThumbnails:asyncEnd',
    ]);
    for (const s of handlers) expect((s.message as unknown as HandlerMessage).parent).toBe(delivery);
    expect(handlers.at(-1)?.message.error).toBe(failure);
    expect(handlers.at(-1)?.snapshot).toMatchObject({ index: 1, deliveryId: 'dlv_diag_1', job: undefined });
    expect(ended(seen, 'delivery')[0]).toMatchObject({ status: 500, code: 'HANDLER_FAILED', outcome: 'rejected' });
  });

  it('end a handler that throws synchronously with error, end, then asyncEnd last, as every step', async () => {
    const seen = listen('handler');
    const webhooks = new Webhooks({ secret: SECRET });
    const failure = new TypeError('bad input');
    webhooks.on('image.created', function parseImage() {
      throw failure;
    });
    webhooks.onError(() => {});
    expect((await post(webhooks).answer).status).toBe(500);
    expect(seen.map((s) => s.event)).toEqual(['start', 'error', 'end', 'asyncStart', 'asyncEnd']);
    expect(seen.at(-1)?.message.error).toBe(failure);
  });

  it("run a handler inside the subscriber's context when it sets runInContext", async () => {
    const channel = diagnostics_channel.tracingChannel<unknown, HandlerMessage>(CHANNELS.handler);
    const inside: string[] = [];
    let depth = 0;
    const handlers = {
      start(message: HandlerMessage) {
        message.runInContext = <T>(fn: () => T): T => {
          depth++;
          try {
            return fn();
          } finally {
            depth--;
          }
        };
      },
      end() {},
      asyncStart() {},
      asyncEnd() {},
      error() {},
    };
    channel.subscribe(handlers);
    unsubscribes.push(() => channel.unsubscribe(handlers));
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', () => void inside.push(`depth ${depth}`));
    expect((await post(webhooks).answer).status).toBe(200);
    expect(inside).toEqual(['depth 1']);
  });

  it('store the trace context a subscriber sets at enqueue with the job, and hand it to the worker', async () => {
    const jobs: QueuedDelivery[] = [];
    const queue: WebhookQueue & { engine: string; queueName: string } = {
      engine: 'map',
      queueName: 'webhooks',
      enqueue: async (delivery) => void jobs.push(structuredClone(delivery)),
    };
    const enqueue = diagnostics_channel.tracingChannel<unknown, EnqueueMessage>(CHANNELS.enqueue);
    const setContext = {
      start(message: EnqueueMessage) {
        message.traceContext = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
      },
      end() {},
      asyncStart() {},
      asyncEnd() {},
      error() {},
    };
    enqueue.subscribe(setContext);
    unsubscribes.push(() => enqueue.unsubscribe(setContext));
    const seen = listen('delivery', 'enqueue', 'job', 'handler');
    const receiver = new Webhooks({ secret: SECRET, queue });
    const { answer } = post(receiver);
    expect((await answer).status).toBe(202);
    const sent = ended(seen, 'enqueue')[0];
    expect(sent).toMatchObject({ engine: 'map', queueName: 'webhooks', deliveryId: 'dlv_diag_1' });
    expect(sent?.error).toBeUndefined();
    const delivery = seen.find((s) => s.channel === 'delivery')?.message;
    expect((seen.find((s) => s.channel === 'enqueue')?.message as unknown as EnqueueMessage | undefined)?.parent).toBe(
      delivery,
    );
    expect(ended(seen, 'delivery')[0]).toMatchObject({ mode: 'queued', status: 202, outcome: 'queued' });
    expect(jobs[0]?.traceContext).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });

    const worker = new Webhooks({ secret: SECRET });
    worker.on('image.created', function inWorker() {});
    const job = { engine: 'map', jobId: 'j1', attempt: 1, maxAttempts: 3, queuedAt: 0 };
    await worker.process(jobs[0] as QueuedDelivery, job);
    const processed = seen.filter((s) => s.channel === 'job');
    expect(processed.map((s) => s.event)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
    expect(processed[0]?.snapshot).toMatchObject({
      eventId: jobs[0]?.event.id,
      job,
      traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    const handler = seen.find((s) => s.channel === 'handler');
    expect((handler?.message as unknown as HandlerMessage | undefined)?.parent).toBe(processed[0]?.message);
    expect((handler?.message as unknown as HandlerMessage | undefined)?.job).toEqual(job);
  });

  it('read back only a bounded trace context of strings from a job: the queue is untrusted storage', async () => {
    const seen = listen('job');
    const worker = new Webhooks({ secret: SECRET });
    const event = createTestEvent('image.created');
    const job = { engine: 'map', jobId: 'j1', attempt: 1, maxAttempts: 3, queuedAt: 0 };
    const stored = (traceContext: unknown) =>
      ({ event, deliveryId: 'd', timestamp: 1, traceContext }) as unknown as QueuedDelivery;
    await worker.process(stored({ traceparent: 'x'.repeat(513), tracestate: 7, ok: 'yes' }), job);
    await worker.process(stored('00-abc'), job);
    await worker.process(stored(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v']))), job);
    const contexts = seen
      .filter((s) => s.event === 'start')
      .map((s) => (s.message as unknown as JobMessage).traceContext);
    expect(contexts[0]).toEqual({ ok: 'yes' });
    expect(contexts[1]).toBeUndefined();
    expect(Object.keys(contexts[2] ?? {})).toHaveLength(8);
  });

  it('end an enqueue the queue refused in an error, answered 503', async () => {
    const seen = listen('enqueue');
    const webhooks = new Webhooks({
      secret: SECRET,
      queue: { enqueue: () => Promise.reject(new Error('redis down')) },
    });
    webhooks.onError(() => {});
    expect((await post(webhooks).answer).status).toBe(503);
    expect(seen.map((s) => s.event)).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(seen.at(-1)?.snapshot).toMatchObject({ engine: undefined, queueName: undefined });
    expect((seen.at(-1)?.message.error as { code?: string } | undefined)?.code).toBe('QUEUE_UNAVAILABLE');
  });

  it('trace a transaction from BEGIN to COMMIT, to ROLLBACK, and one that was never opened', async () => {
    const committed = new Set<string>();
    const transactions: EventTransactions<string> = {
      async begin(eventId) {
        if (committed.has(eventId)) return { state: 'completed' };
        return {
          state: 'claimed',
          transaction: `tx ${eventId}`,
          commit: async () => void committed.add(eventId),
          rollback: async () => {},
        };
      },
    };
    const seen = listen('transaction');
    const webhooks = new Webhooks({ secret: SECRET, transactions });
    let fail = true;
    webhooks.on('image.created', () => {
      if (fail) throw new Error('no');
    });
    webhooks.onError(() => {});
    const event = createTestEvent('image.created');
    expect((await post(webhooks, event).answer).status).toBe(500);
    fail = false;
    expect((await post(webhooks, event).answer).status).toBe(200);
    expect((await post(webhooks, event).answer).status).toBe(200);
    expect(ended(seen, 'transaction').map((m) => m.result)).toEqual(['rolled-back', 'committed', 'completed']);
    expect(ended(seen, 'transaction')[0]).toMatchObject({ eventId: event.id, eventType: 'image.created' });
    const message = seen[0]?.message as unknown as TransactionMessage;
    expect(message.error).toBeUndefined();
  });

  it('never put the secret, the signature or the body in a message', async () => {
    const seen = listen('delivery', 'handler', 'enqueue', 'transaction');
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', () => {});
    const marker = 'body_marker_9f8e7d';
    const event = createTestEvent('image.created', { id: 'img_1', marker } as never);
    const { request, answer } = post(webhooks, event);
    await answer;
    const forged = { ...request.headers, 'x-service-signature': `t=${event.created},v1=${'ab'.repeat(32)}` };
    await webhooks.handle({ method: 'POST', headers: forged, body: request.body, request: {} });
    const everything = JSON.stringify(seen.map((s) => s.snapshot));
    expect(everything).toContain('image.created');
    for (const secretPart of [SECRET, request.headers['x-service-signature'], 'ab'.repeat(32), marker]) {
      expect(everything).not.toContain(secretPart);
    }
  });

  it('answer the same when a subscriber is there and when it is not', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', () => {});
    const event = createTestEvent('image.created');
    const quiet = await post(webhooks, event).answer;
    listen('delivery', 'handler');
    const traced = await post(webhooks, createTestEvent('image.created')).answer;
    expect(traced).toEqual(quiet);
    expect(diagnostics_channel.tracingChannel(CHANNELS.delivery).hasSubscribers).toBe(true);
  });
});

describe('a runtime without diagnostics_channel', () => {
  it('answers as usual and publishes nothing', async () => {
    vi.resetModules();
    const getBuiltinModule = process.getBuiltinModule;
    // As in workerd without nodejs_compat: no way to load node:diagnostics_channel.
    Object.defineProperty(process, 'getBuiltinModule', { value: undefined, configurable: true, writable: true });
    try {
      const fresh = await import('./index.js');
      const seen = listen('delivery', 'handler');
      const webhooks = new fresh.Webhooks({ secret: SECRET });
      const ran: string[] = [];
      webhooks.on('image.created', (event) => void ran.push(event.id));
      const event = createTestEvent('image.created');
      const request = createSignedRequest(event, { secret: SECRET });
      const answer = await webhooks.handle({ method: 'POST', headers: request.headers, body: request.body });
      expect(answer.status).toBe(200);
      expect(ran).toEqual([event.id]);
      // Subscribed on Node's channels, but this copy of core could not load them.
      expect(seen).toEqual([]);
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', {
        value: getBuiltinModule,
        configurable: true,
        writable: true,
      });
      vi.resetModules();
    }
  });
});

describe('the transaction trace when the database fails', () => {
  /** Transactions on a Map whose begin, commit or rollback fail on demand. */
  function failing() {
    const state = { begin: false, commit: false, rollback: false, busy: false };
    const transactions: EventTransactions<string> = {
      async begin() {
        if (state.begin) throw new Error('connection refused');
        if (state.busy) return { state: 'in-flight' };
        return {
          state: 'claimed',
          transaction: 'tx',
          commit: async () => {
            if (state.commit) throw new Error('commit lost');
          },
          rollback: async () => {
            if (state.rollback) throw new Error('rollback lost');
          },
        };
      },
    };
    return { state, transactions };
  }

  it('ends in an error for a BEGIN, a COMMIT or a ROLLBACK that failed, and without one for a busy event', async () => {
    const seen = listen('transaction');
    const { state, transactions } = failing();
    const webhooks = new Webhooks({ secret: SECRET, transactions });
    let throwIn = false;
    webhooks.on('image.created', () => {
      if (throwIn) throw new Error('handler');
    });
    webhooks.onError(() => {});
    state.begin = true;
    expect((await post(webhooks).answer).status).toBe(503);
    state.begin = false;
    state.busy = true;
    expect((await post(webhooks).answer).status).toBe(409);
    state.busy = false;
    state.commit = true;
    expect((await post(webhooks).answer).status).toBe(503);
    state.commit = false;
    state.rollback = true;
    throwIn = true;
    expect((await post(webhooks).answer).status).toBe(500);
    const ends = ended(seen, 'transaction').map((m) => m.result);
    expect(ends).toEqual(['begin-failed', 'busy', 'commit-failed', 'rolled-back']);
    const errors = seen.filter((s) => s.event === 'error').map((s) => String((s.message.error as Error).message));
    expect(errors).toEqual(['connection refused', 'commit lost', 'rollback lost']);
  });

  it('in a queue worker too, with the job message as parent of the handlers', async () => {
    const seen = listen('transaction', 'job');
    const { state, transactions } = failing();
    const worker = new Webhooks({ secret: SECRET, transactions });
    worker.on('image.created', () => {});
    worker.onError(() => {});
    const event = createTestEvent('image.created');
    const job = { engine: 'map', jobId: 'j1', attempt: 1, maxAttempts: 3, queuedAt: 0 };
    state.commit = true;
    await expect(worker.process({ event, deliveryId: 'd', timestamp: 1 }, job)).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    expect(ended(seen, 'transaction').map((m) => m.result)).toEqual(['commit-failed']);
    const jobEvents = seen.filter((s) => s.channel === 'job').map((s) => s.event);
    expect(jobEvents).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
  });
});

describe('the logger in a queue worker', () => {
  it("gets the job's fields with a failure nobody listens for", async () => {
    const calls: { fields: Record<string, unknown>; message: string }[] = [];
    const worker = new Webhooks({
      secret: SECRET,
      logger: { error: (fields, message) => void calls.push({ fields, message }), warn: () => {} },
    });
    worker.on('image.created', () => {
      throw new Error('thumbnail service down');
    });
    const event = createTestEvent('image.created');
    const job = { engine: 'map', jobId: 'j9', attempt: 3, maxAttempts: 3, queuedAt: 0, queueName: 'webhooks' };
    await expect(worker.process({ event, deliveryId: 'd', timestamp: 1 }, job)).rejects.toThrow(
      'thumbnail service down',
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]?.fields).toMatchObject({
      code: 'HANDLER_FAILED',
      eventId: event.id,
      job: { engine: 'map', jobId: 'j9', attempt: 3, maxAttempts: 3 },
    });
    expect(calls[0]?.message).toContain('no attempts remain');
  });
});

describe('on Web Crypto (a runtime without node:crypto)', () => {
  afterEach(() => setWebCryptoOnly(false));

  it('times the asynchronous verification, and a refusal that comes from it', async () => {
    // Signed before node:crypto is hidden: the signing helpers need it.
    const good = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const forged = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_someone_else' });
    setWebCryptoOnly(true);
    const seen = listen('delivery');
    const webhooks = new Webhooks({ secret: [OLD_SECRET, SECRET] });
    webhooks.on('image.created', () => {});
    for (const [request, status] of [
      [good, 200],
      [forged, 400],
    ] as const) {
      const answer = await webhooks.handle({ method: 'POST', headers: request.headers, body: request.body });
      expect(answer.status).toBe(status);
    }
    const [verified, refused] = ended(seen, 'delivery');
    expect(verified).toMatchObject({ outcome: 'processed', secretIndex: 1, eventType: 'image.created' });
    expect(verified?.verifyMs).toBeGreaterThanOrEqual(0);
    expect(refused).toMatchObject({ outcome: 'rejected', code: 'SIGNATURE_MISMATCH', secretIndex: undefined });
    expect(refused?.verifyMs).toBeGreaterThanOrEqual(0);
  });
});
