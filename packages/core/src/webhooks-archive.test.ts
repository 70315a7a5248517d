/**
 * The archive through the core seam: what `handle()`, `process()` and `replay()` write to an
 * archive in each mode, and that an archive that fails or hangs changes no answer. The archive here
 * is core's own `MemoryArchive` (and a small wrapper that fails or hangs on demand); the Postgres
 * and Redis archives run the same paths against real servers in their packages.
 */
import { describe, expect, it } from 'vitest';
import {
  type ArchiveEntry,
  type BegunEvent,
  type EventTransactions,
  type InboxTimelineEntry,
  MemoryArchive,
  MemoryStore,
  type QueuedDelivery,
  type QueuedRun,
  type WebhookEvent,
  type WebhookQueue,
  Webhooks,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_archive_seam_5c6d';

/** A MemoryArchive whose writes can be made to fail or hang, as a database that is down. */
class FlakyArchive extends MemoryArchive {
  fail: unknown;
  hang = false;
  writeTimeoutMs = 50;
  readonly seen: { entry: ArchiveEntry; transaction: unknown }[] = [];
  override record(entry: ArchiveEntry, transaction?: unknown): Promise<void> {
    this.seen.push({ entry, transaction });
    if (this.hang) return new Promise(() => {});
    if (this.fail !== undefined) return Promise.reject(this.fail);
    return super.record(entry);
  }
}

type AnyTestEvent = WebhookEvent<string, object>;

function signed(event: AnyTestEvent = createTestEvent('image.created'), deliveryId?: string) {
  return createSignedRequest(event, { secret: SECRET, ...(deliveryId ? { deliveryId } : {}) });
}

function post(webhooks: Webhooks, event: AnyTestEvent = createTestEvent('image.created'), deliveryId?: string) {
  const { headers, body } = signed(event, deliveryId);
  return webhooks.handle({ method: 'POST', headers: { ...headers, 'x-extra': ['a', 'b'] }, body, request: {} });
}

function errors(webhooks: Webhooks): WebhookVerificationError[] {
  const heard: WebhookVerificationError[] = [];
  webhooks.onError((error) => void heard.push(error));
  return heard;
}

function kinds(timeline: readonly InboxTimelineEntry[]): string[] {
  return timeline.map((entry) => `${entry.kind}:${entry.result}`);
}

describe('archive: inline mode', () => {
  it('keeps the exact bytes, the headers as received, the answer and each handler run', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    webhooks.on('image.created', function thumbnails() {});
    webhooks.on('image.created', async () => {});
    const event = createTestEvent('image.created', { id: 'img_archived' });
    const { headers, body } = signed(event, 'dlv_first');
    const answer = await webhooks.handle({ method: 'POST', headers: { ...headers, 'x-extra': ['a', 'b'] }, body });
    expect(answer.status).toBe(200);
    const kept = await archive.get(event.id);
    expect(new TextDecoder().decode(kept?.body)).toBe(body);
    expect(kept?.headers['x-service-delivery']).toBe('dlv_first');
    expect(kept?.headers['x-extra']).toBe('a, b');
    expect(kept?.headers['x-service-signature']).toBe(headers['x-service-signature']);
    expect(kept).toMatchObject({ eventType: 'image.created', outcome: 'processed', deliveries: 1, mode: 'inline' });
    const [entry] = kept?.timeline ?? [];
    expect(entry).toMatchObject({ kind: 'delivery', result: 'processed', status: 200, deliveryId: 'dlv_first' });
    expect(entry && 'body' in entry).toBe(false);
    expect(entry?.runs.map((run) => [run.handler, run.ok])).toEqual([
      ['thumbnails', true],
      ['#1', true],
    ]);
  });

  it('records a failed run with its error, then the retry that succeeded, and a duplicate', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const heard = errors(webhooks);
    let fail = true;
    webhooks.on('image.created', async () => {
      if (fail) throw new RangeError('billing API down');
    });
    const event = createTestEvent('image.created');
    expect((await post(webhooks, event)).status).toBe(500);
    expect((await archive.get(event.id))?.outcome).toBe('failed');
    fail = false;
    expect((await post(webhooks, event)).status).toBe(200);
    expect((await post(webhooks, event)).status).toBe(200);
    const kept = await archive.get(event.id);
    expect(kept?.outcome).toBe('processed');
    expect(kept?.deliveries).toBe(3);
    expect(kinds(kept?.timeline ?? [])).toEqual(['delivery:failed', 'delivery:processed', 'delivery:duplicate']);
    const failed = kept?.timeline[0];
    expect(failed?.kind === 'delivery' && failed.code).toBe('HANDLER_FAILED');
    expect(failed?.runs[0]?.error).toBe('RangeError: billing API down');
    expect(heard.map((e) => e.code)).toEqual(['HANDLER_FAILED']);
  });

  it('archives an event without handlers, and nothing of a request it refuses', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const event = createTestEvent('quota.warned');
    expect((await post(webhooks, event)).status).toBe(200);
    expect((await archive.get(event.id))?.outcome).toBe('processed');
    const forged = createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_forger' });
    expect((await webhooks.handle({ method: 'POST', ...forged })).status).toBe(400);
    expect(archive.size).toBe(1);
  });

  it('answers as without an archive when its write fails or hangs, and tells onError ARCHIVE_FAILED', async () => {
    for (const mode of ['fail', 'hang'] as const) {
      const archive = new FlakyArchive();
      if (mode === 'fail') archive.fail = new Error('connection refused');
      else archive.hang = true;
      const webhooks = new Webhooks({ secret: SECRET, archive });
      const heard = errors(webhooks);
      const ran: string[] = [];
      webhooks.on('image.created', (event) => void ran.push(event.id));
      const event = createTestEvent('image.created');
      const answer = await post(webhooks, event);
      expect(answer.status).toBe(200);
      expect(ran).toEqual([event.id]);
      expect(heard.map((e) => e.code)).toEqual(['ARCHIVE_FAILED']);
      expect(heard[0]?.message).toContain(event.id);
      if (mode === 'fail') expect((heard[0]?.cause as Error | undefined)?.message).toBe('connection refused');
      else expect(heard[0]?.message).toContain('writeTimeoutMs (50 ms)');
    }
  });

  it('records a 409 for an event running elsewhere without changing its outcome', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive, store: new MemoryStore() });
    let release: () => void = () => {};
    webhooks.on('image.created', () => new Promise<void>((resolve) => (release = resolve)));
    const event = createTestEvent('image.created');
    const first = post(webhooks, event);
    expect((await post(webhooks, event)).status).toBe(409);
    release();
    expect((await first).status).toBe(200);
    const kept = await archive.get(event.id);
    // Both kept (in the order they arrived: the same millisecond here, so either order).
    expect(kinds(kept?.timeline ?? []).sort()).toEqual(['delivery:in-flight', 'delivery:processed']);
    expect(kept?.outcome).toBe('processed');
  });
});

/** A transactional database in a Map, as in webhooks-transactions.test.ts, that can replay. */
class MapDatabase implements EventTransactions<{ staged: string[] }> {
  readonly processed = new Set<string>();
  readonly locked = new Set<string>();
  readonly rows: string[] = [];
  failCommit: unknown;
  async begin(eventId: string, options?: { replay?: boolean }): Promise<BegunEvent<{ staged: string[] }>> {
    if (this.locked.has(eventId)) return { state: 'in-flight' };
    if (this.processed.has(eventId) && !options?.replay) return { state: 'completed' };
    this.locked.add(eventId);
    const tx = { staged: [] as string[] };
    return {
      state: 'claimed',
      transaction: tx,
      commit: async () => {
        this.locked.delete(eventId);
        if (this.failCommit !== undefined) throw this.failCommit;
        this.rows.push(...tx.staged);
        this.processed.add(eventId);
      },
      rollback: async () => {
        this.locked.delete(eventId);
      },
    };
  }
}

describe('archive: transactional mode', () => {
  it('writes the entry through the event’s transaction, before its commit', async () => {
    const archive = new FlakyArchive();
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, archive, transactions: db });
    webhooks.on('image.created', (event, { transaction }) => void transaction.staged.push(event.id));
    const event = createTestEvent('image.created');
    expect((await post(webhooks, event)).status).toBe(200);
    expect(archive.seen).toHaveLength(1);
    expect((archive.seen[0]?.transaction as { staged: string[] } | undefined)?.staged).toEqual([event.id]);
    expect((await archive.get(event.id))?.mode).toBe('transactional');
    // A duplicate is written outside any transaction.
    expect((await post(webhooks, event)).status).toBe(200);
    expect(archive.seen[1]?.transaction).toBeUndefined();
    expect(archive.seen[1]?.entry.result).toBe('duplicate');
  });

  it('archives a failed commit after it, as a failure, and a rollback as one too', async () => {
    const archive = new FlakyArchive();
    const db = new MapDatabase();
    db.failCommit = new Error('serialization failure');
    const webhooks = new Webhooks({ secret: SECRET, archive, transactions: db });
    errors(webhooks);
    webhooks.on('image.created', () => {});
    const event = createTestEvent('image.created');
    expect((await post(webhooks, event)).status).toBe(503);
    expect(archive.seen.map((s) => [s.entry.result, s.transaction === undefined])).toEqual([
      ['processed', false],
      ['failed', true],
    ]);
    expect((await archive.get(event.id))?.outcome).toBe('failed');
  });
});

/** One job per event id (or replay id), like a real engine. */
class MapQueue implements WebhookQueue {
  readonly jobs = new Map<string, QueuedDelivery>();
  async enqueue(delivery: QueuedDelivery): Promise<void> {
    const id = delivery.replay === undefined ? delivery.event.id : `${delivery.event.id}~${delivery.replay}`;
    if (!this.jobs.has(id)) this.jobs.set(id, structuredClone(delivery));
  }
}

function job(attempt: number, maxAttempts = 2): QueuedRun {
  return { engine: 'map', jobId: 'job-1', attempt, maxAttempts, queuedAt: 1_700_000_000_000 };
}

describe('archive: queued mode', () => {
  it('records the enqueue, each attempt of the job and the dead letter', async () => {
    const archive = new MemoryArchive();
    const queue = new MapQueue();
    const receiver = new Webhooks({ secret: SECRET, archive, queue });
    const worker = new Webhooks({ secret: SECRET, archive });
    errors(worker);
    worker.on('image.created', () => {
      throw new Error('still broken');
    });
    const event = createTestEvent('image.created');
    expect((await post(receiver, event)).status).toBe(202);
    expect((await archive.get(event.id))?.outcome).toBe('queued');
    // A redelivery while it waits keeps it queued.
    expect((await post(receiver, event)).status).toBe(202);
    const queued = queue.jobs.get(event.id) as QueuedDelivery;
    await expect(worker.process(queued, job(1))).rejects.toThrow('still broken');
    expect((await archive.get(event.id))?.outcome).toBe('failed');
    await expect(worker.process(queued, job(2))).rejects.toThrow('still broken');
    const kept = await archive.get(event.id);
    expect(kept?.outcome).toBe('dead-letter');
    expect(kinds(kept?.timeline ?? [])).toEqual([
      'delivery:queued',
      'delivery:queued',
      'job:failed',
      'job:dead-letter',
    ]);
    expect(kept?.timeline[3]).toMatchObject({
      attempt: 2,
      maxAttempts: 2,
      jobId: 'job-1',
      error: 'Error: still broken',
    });
  });

  it('records a job that succeeds, in the transaction in transactional mode', async () => {
    const archive = new FlakyArchive();
    const db = new MapDatabase();
    const worker = new Webhooks({ secret: SECRET, archive, transactions: db });
    worker.on('image.created', () => {});
    const event = createTestEvent('image.created');
    await worker.process({ event, deliveryId: 'd1', timestamp: 1_700_000_000 }, job(1));
    expect(archive.seen.map((s) => [s.entry.kind, s.entry.result, s.transaction !== undefined])).toEqual([
      ['job', 'processed', true],
    ]);
  });
});

describe('replay from the archive', () => {
  it('runs a processed event’s handlers again, says so to them, and records it', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const runs: (boolean | undefined)[] = [];
    webhooks.on('image.created', (_event, context) => void runs.push(context.replay));
    const event = createTestEvent('image.created');
    await post(webhooks, event, 'dlv_1');
    const result = await webhooks.replay(event.id);
    expect(result).toEqual({ eventId: event.id, outcome: 'processed' });
    expect(runs).toEqual([undefined, true]);
    const kept = await archive.get(event.id);
    expect(kinds(kept?.timeline ?? [])).toEqual(['delivery:processed', 'replay:processed']);
    // Its deliveries are still duplicates afterwards.
    expect(JSON.parse((await post(webhooks, event)).body)).toEqual({ received: true, duplicate: true });
    expect(runs).toHaveLength(2);
  });

  it('completes an event that had failed, so later deliveries are duplicates', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    errors(webhooks);
    let fail = true;
    webhooks.on('image.created', () => {
      if (fail) throw new Error('bug');
    });
    const event = createTestEvent('image.created');
    expect((await post(webhooks, event)).status).toBe(500);
    fail = false;
    expect((await webhooks.replay(event.id)).outcome).toBe('processed');
    expect((await archive.get(event.id))?.outcome).toBe('processed');
    expect(JSON.parse((await post(webhooks, event)).body)).toEqual({ received: true, duplicate: true });
  });

  it('answers running for an event in flight, not-found for one not archived, and failed for a handler that fails', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const heard = errors(webhooks);
    let release: () => void = () => {};
    let hold = false;
    let fail = false;
    webhooks.on('image.created', () => {
      if (fail) throw new Error('replayed and failed');
      if (hold) return new Promise<void>((resolve) => (release = resolve));
    });
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    hold = true;
    const replaying = webhooks.replay(event.id);
    const second = await webhooks.replay(event.id);
    expect(second.outcome).toBe('running');
    release();
    expect((await replaying).outcome).toBe('processed');
    expect((await webhooks.replay('evt_never')).outcome).toBe('not-found');
    hold = false;
    fail = true;
    const failed = await webhooks.replay(event.id);
    expect(failed.outcome).toBe('failed');
    expect((failed.error as Error).message).toBe('replayed and failed');
    expect(heard.at(-1)?.code).toBe('HANDLER_FAILED');
    expect(kinds((await archive.get(event.id))?.timeline ?? []).slice(-1)).toEqual(['replay:failed']);
  });

  it('replays a filtered set, newest first, up to max', async () => {
    const archive = new MemoryArchive();
    let clock = 1_800_000_000_000;
    const webhooks = new Webhooks({ secret: SECRET, archive, tolerance: false, now: () => clock++ });
    const ran: string[] = [];
    webhooks.onAny((event, context) => {
      if (context.replay) ran.push(event.id);
    });
    const events = [
      createTestEvent('image.created', { id: 'a' }),
      createTestEvent('image.deleted', { id: 'b' }),
      createTestEvent('image.created', { id: 'c' }),
    ];
    for (const event of events) await post(webhooks, event);
    const results = await webhooks.replayMany({ type: 'image.created' });
    expect(results.map((r) => r.outcome)).toEqual(['processed', 'processed']);
    expect(ran).toEqual([events[2]?.id, events[0]?.id]);
    expect(await webhooks.replayMany({}, { max: 1 })).toHaveLength(1);
    await expect(webhooks.replayMany({}, { max: 0 })).rejects.toThrow('max must be a positive whole number');
  });

  it('writes a new job in queued mode, which the worker runs as a replay', async () => {
    const archive = new MemoryArchive();
    const queue = new MapQueue();
    const receiver = new Webhooks({ secret: SECRET, archive, queue });
    const event = createTestEvent('image.created');
    await post(receiver, event);
    expect((await receiver.replay(event.id)).outcome).toBe('queued');
    expect(queue.jobs.size).toBe(2);
    const replayJob = [...queue.jobs.values()].find((d) => d.replay !== undefined) as QueuedDelivery;
    const worker = new Webhooks({ secret: SECRET, archive });
    const seen: (boolean | undefined)[] = [];
    worker.on('image.created', (_e, context) => void seen.push(context.replay));
    await worker.process(replayJob, job(1));
    expect(seen).toEqual([true]);
    expect(kinds((await archive.get(event.id))?.timeline ?? [])).toEqual([
      'delivery:queued',
      'replay:queued',
      'job:processed',
    ]);
  });

  it('opens the event’s transaction past its record in transactional mode', async () => {
    const archive = new MemoryArchive();
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, archive, transactions: db });
    webhooks.on('image.created', (event, { transaction }) => void transaction.staged.push(event.id));
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    expect((await webhooks.replay(event.id)).outcome).toBe('processed');
    expect(db.rows).toEqual([event.id, event.id]);
  });

  it('runs what the CLI or the dashboard asks for through the archive', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const event = createTestEvent('image.created');
    const replayed = new Promise<boolean | undefined>((resolve) => {
      webhooks.on('image.created', (_e, context) => {
        if (context.replay) resolve(context.replay);
      });
    });
    await post(webhooks, event);
    expect(await archive.requestReplay([event.id, 'evt_unknown'])).toBe(1);
    expect(await replayed).toBe(true);
  });

  it('needs an archive that can be read back', async () => {
    const plain = new Webhooks({ secret: SECRET });
    await expect(plain.replay('evt_1')).rejects.toThrow('give new Webhooks({ archive })');
    const writeOnly = new Webhooks({ secret: SECRET, archive: { record: async () => {} } });
    await expect(writeOnly.replay('evt_1')).rejects.toThrow('cannot be read back');
    await expect(writeOnly.replay('')).rejects.toThrow('needs the id of an archived event');
    expect(() => new Webhooks({ secret: SECRET, archive: {} as never })).toThrow('archive must have a record() method');
  });
});

describe('archive: what is kept of odd input', () => {
  it('keeps a Headers object’s headers, and a failure that is not an Error, cut to 500 characters', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    errors(webhooks);
    webhooks.on('image.created', () => {
      throw 'x'.repeat(600);
    });
    webhooks.on('image.deleted', () => {
      throw { reason: 'an object' };
    });
    const created = createTestEvent('image.created');
    const { headers, body } = signed(created);
    const answer = await webhooks.handle({ method: 'POST', headers: new Headers(headers), body });
    expect(answer.status).toBe(500);
    const kept = await archive.get(created.id);
    expect(kept?.headers['x-service-event']).toBe('image.created');
    const error = kept?.timeline[0]?.runs[0]?.error ?? '';
    expect(error.startsWith('string: xxx')).toBe(true);
    expect(error).toHaveLength(501);
    const deleted = createTestEvent('image.deleted');
    await post(webhooks, deleted);
    expect((await archive.get(deleted.id))?.timeline[0]?.runs[0]?.error).toBe('Object: [object Object]');
  });
});

describe('replay: when it cannot run', () => {
  it('says failed when the archive cannot give the event back, or gives another event', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const heard = errors(webhooks);
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    const get = archive.get.bind(archive);
    archive.get = async () => {
      throw new Error('database gone');
    };
    const gone = await webhooks.replay(event.id);
    expect(gone.outcome).toBe('failed');
    expect(heard.at(-1)?.code).toBe('ARCHIVE_FAILED');
    archive.get = async (id) => {
      const stored = await get(id);
      return stored && { ...stored, body: new TextEncoder().encode(JSON.stringify({ ...event, id: 'evt_other' })) };
    };
    const swapped = await webhooks.replay(event.id);
    expect(swapped.outcome).toBe('failed');
    expect(heard.at(-1)?.code).toBe('INVALID_EVENT');
  });

  it('says failed when the store or the queue is down', async () => {
    const archive = new MemoryArchive();
    const store = new MemoryStore();
    const webhooks = new Webhooks({ secret: SECRET, archive, store });
    const heard = errors(webhooks);
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    store.claim = async () => {
      throw new Error('store down');
    };
    expect((await webhooks.replay(event.id)).outcome).toBe('failed');
    expect(heard.at(-1)?.code).toBe('STORE_UNAVAILABLE');

    const queue = new MapQueue();
    queue.enqueue = async () => {
      throw new Error('queue down');
    };
    const receiver = new Webhooks({ secret: SECRET, archive, queue });
    errors(receiver);
    const failed = await receiver.replay(event.id);
    expect(failed.outcome).toBe('failed');
    expect((failed.error as WebhookVerificationError).code).toBe('QUEUE_UNAVAILABLE');
    expect(kinds((await archive.get(event.id))?.timeline ?? []).slice(-2)).toEqual(['replay:queued', 'replay:failed']);
  });

  it('in transactional mode: completed without replay support, running, rolled back, or a failed commit', async () => {
    const archive = new MemoryArchive();
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, archive, transactions: db });
    const heard = errors(webhooks);
    let fail = false;
    webhooks.on('image.created', (event, { transaction }) => {
      if (fail) throw new Error('handler bug');
      transaction.staged.push(event.id);
    });
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    fail = true;
    expect((await webhooks.replay(event.id)).outcome).toBe('failed');
    expect(db.locked.size).toBe(0);
    fail = false;
    db.locked.add(event.id);
    expect((await webhooks.replay(event.id)).outcome).toBe('running');
    db.locked.clear();
    db.failCommit = new Error('commit lost');
    const lost = await webhooks.replay(event.id);
    expect(lost.outcome).toBe('failed');
    expect(heard.at(-1)?.code).toBe('STORE_UNAVAILABLE');
    db.failCommit = undefined;
    const old = new Webhooks({
      secret: SECRET,
      archive,
      transactions: { begin: (eventId: string) => db.begin(eventId) },
    });
    expect((await old.replay(event.id)).outcome).toBe('completed');
    expect(db.rows).toEqual([event.id]);
  });

  it('runs without a store, every time', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive, store: false });
    let runs = 0;
    webhooks.on('image.created', () => void runs++);
    const event = createTestEvent('image.created');
    await post(webhooks, event);
    await webhooks.replay(event.id);
    await webhooks.replay(event.id);
    expect(runs).toBe(3);
  });
});
