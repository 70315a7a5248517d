/**
 * Transactional mode through the core seam, with a small transactional database written for these
 * tests (a whole `EventTransactions`: rows staged per transaction, visible only once committed, a
 * lock per event). What the seam promises does not depend on the database; `@pixhook/postgres`
 * runs the same paths on a real Postgres, over every adapter.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type BegunEvent,
  type CommitReadBack,
  type EventTransactions,
  type QueuedRun,
  type TransactionalHandlerContext,
  Webhooks,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_transactions_seam_9f8e';

/** What a handler writes through: staged rows, kept only if the transaction commits. */
class Tx {
  readonly staged: string[] = [];
  constructor(readonly eventId: string) {}
  insert(row: string): void {
    this.staged.push(row);
  }
}

class MapDatabase implements EventTransactions<Tx> {
  readonly rows: string[] = [];
  readonly processed = new Set<string>();
  readonly locked = new Set<string>();
  begins = 0;
  commits = 0;
  rollbacks = 0;
  failBegin: unknown;
  failCommit: unknown;
  failRollback: unknown;
  /** What commit() resolves with after committing (a `CommitReadBack` when its answer was "lost"). */
  commitAnswer: unknown;

  async begin(eventId: string): Promise<BegunEvent<Tx>> {
    this.begins += 1;
    if (this.failBegin !== undefined) throw this.failBegin;
    if (this.locked.has(eventId)) return { state: 'in-flight' };
    if (this.processed.has(eventId)) return { state: 'completed' };
    this.locked.add(eventId);
    const tx = new Tx(eventId);
    return {
      state: 'claimed',
      transaction: tx,
      commit: async () => {
        this.locked.delete(eventId);
        if (this.failCommit !== undefined) throw this.failCommit;
        this.commits += 1;
        this.rows.push(...tx.staged);
        this.processed.add(eventId);
        return this.commitAnswer as undefined;
      },
      rollback: async () => {
        this.locked.delete(eventId);
        this.rollbacks += 1;
        if (this.failRollback !== undefined) throw this.failRollback;
      },
    };
  }
}

function setup() {
  const db = new MapDatabase();
  const webhooks = new Webhooks({ secret: SECRET, transactions: db });
  const errors: WebhookVerificationError[] = [];
  webhooks.onError((error) => void errors.push(error));
  return { db, webhooks, errors };
}

function post(webhooks: { handle: Webhooks['handle'] }, event = createTestEvent('image.created', { id: 'img_1' })) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return webhooks.handle({ method: 'POST', headers, body });
}

const code = (body: string) => JSON.parse(body).error.code;

describe('transactional mode: in the request', () => {
  it('runs the handlers with the open transaction and commits: 200, the writes kept, a redelivery is a duplicate', async () => {
    const { db, webhooks } = setup();
    const seen: unknown[] = [];
    webhooks.on('image.created', (event, context) => {
      seen.push(context.transaction);
      context.transaction.insert(`first:${event.id}`);
    });
    webhooks.on('image.created', async (event, { transaction }) => {
      transaction.insert(`second:${event.id}`);
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    const answer = await post(webhooks, event);
    expect(answer.status).toBe(200);
    expect(db.rows).toEqual([`first:${event.id}`, `second:${event.id}`]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(Tx);
    const again = await post(webhooks, event);
    expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });
    expect(db.rows).toHaveLength(2);
    expect(db.begins).toBe(2);
  });

  it('rolls back when a handler throws: 500, no write kept, the retry runs it and commits', async () => {
    const { db, webhooks, errors } = setup();
    let runs = 0;
    webhooks.on('image.created', (event, { transaction }) => {
      transaction.insert(event.id);
      runs += 1;
      if (runs === 1) throw new Error('downstream failed');
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    const first = await post(webhooks, event);
    expect(first.status).toBe(500);
    expect(code(first.body)).toBe('HANDLER_FAILED');
    expect(first.body).not.toContain('downstream failed');
    expect(db.rows).toEqual([]);
    expect(db.rollbacks).toBe(1);
    expect((await post(webhooks, event)).status).toBe(200);
    expect(db.rows).toEqual([event.id]);
    expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED']);
  });

  it('answers 409 IN_FLIGHT at once while the event is held by another open transaction', async () => {
    const { db, webhooks } = setup();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    webhooks.on('image.created', async () => {
      runs += 1;
      await held;
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    const first = post(webhooks, event);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await post(webhooks, event);
    expect(second.status).toBe(409);
    expect(code(second.body)).toBe('IN_FLIGHT');
    release();
    expect((await first).status).toBe(200);
    expect(runs).toBe(1);
    expect(db.commits).toBe(1);
  });

  it('answers 503 STORE_UNAVAILABLE when the transaction cannot be opened, and runs nothing', async () => {
    const { db, webhooks, errors } = setup();
    let runs = 0;
    webhooks.on('image.created', () => {
      runs += 1;
    });
    db.failBegin = new Error('connection refused');
    const answer = await post(webhooks, createTestEvent('image.created'));
    expect(answer.status).toBe(503);
    expect(code(answer.body)).toBe('STORE_UNAVAILABLE');
    expect(runs).toBe(0);
    expect(errors[0]?.cause).toBe(db.failBegin);
  });

  it('answers 503 when begin() answers something else, or throws synchronously', async () => {
    const odd = new Webhooks({
      secret: SECRET,
      transactions: { begin: async () => ({ state: 'claimed', transaction: 1 }) as unknown as BegunEvent<number> },
    });
    odd.onError(() => {});
    odd.onAny(() => {});
    expect((await post(odd)).status).toBe(503);
    const throwing = new Webhooks({
      secret: SECRET,
      transactions: {
        begin: () => {
          throw new Error('sync');
        },
      },
    });
    throwing.onError(() => {});
    throwing.onAny(() => {});
    expect((await post(throwing)).status).toBe(503);
  });

  it('answers 503 when the commit fails: nothing kept, and the retry runs the event again', async () => {
    const { db, webhooks, errors } = setup();
    let runs = 0;
    webhooks.on('image.created', (event, { transaction }) => {
      runs += 1;
      transaction.insert(event.id);
    });
    db.failCommit = new Error('could not serialize access');
    const event = createTestEvent('image.created', { id: 'img_1' });
    const first = await post(webhooks, event);
    expect(first.status).toBe(503);
    expect(code(first.body)).toBe('STORE_UNAVAILABLE');
    expect(db.rows).toEqual([]);
    expect(errors[0]?.cause).toBe(db.failCommit);
    db.failCommit = undefined;
    expect((await post(webhooks, event)).status).toBe(200);
    expect(runs).toBe(2);
    expect(db.rows).toEqual([event.id]);
  });

  it('says the outcome is unknown when the commit rejects with commitOutcome unknown, not that nothing was kept', async () => {
    const { db, webhooks, errors } = setup();
    webhooks.on('image.created', () => {});
    db.failCommit = Object.assign(new Error('the answer to COMMIT was lost'), { commitOutcome: 'unknown' });
    const first = await post(webhooks);
    expect(first.status).toBe(503);
    expect(code(first.body)).toBe('STORE_UNAVAILABLE');
    expect(errors[0]?.message).toMatch(/whether their writes were kept is unknown; .* the retry finds out/);
    expect(errors[0]?.cause).toBe(db.failCommit);
    db.failCommit = new Error('could not serialize access');
    await post(webhooks, createTestEvent('image.created', { id: 'img_2' }));
    expect(errors[1]?.message).toMatch(/none of their writes were kept/);
  });

  it('answers 200 when the commit resolves with a CommitReadBack, and tells onError its answer was lost', async () => {
    const { db, webhooks, errors } = setup();
    webhooks.on('image.created', (event, { transaction }) => transaction.insert(event.id));
    const lost = new Error('Connection terminated unexpectedly');
    db.commitAnswer = { answerLost: lost } satisfies CommitReadBack;
    const answer = await post(webhooks);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ received: true });
    expect(errors.map((error) => [error.code, error.cause])).toEqual([['STORE_UNAVAILABLE', lost]]);
    expect(errors[0]?.message).toMatch(/was lost, but the event's record was read back on another connection/);
    expect(db.rows).toHaveLength(1);
  });

  it('still answers 500 HANDLER_FAILED when the rollback fails, and tells onError of both', async () => {
    const { db, webhooks, errors } = setup();
    webhooks.on('image.created', () => {
      throw new Error('boom');
    });
    db.failRollback = new Error('connection lost');
    const answer = await post(webhooks);
    expect(answer.status).toBe(500);
    expect(errors.map((error) => error.code)).toEqual(['STORE_UNAVAILABLE', 'HANDLER_FAILED']);
    expect(errors[0]?.cause).toBe(db.failRollback);
  });

  it('opens no transaction for an event without handlers', async () => {
    const { db, webhooks } = setup();
    webhooks.on('image.deleted', () => {});
    expect((await post(webhooks)).status).toBe(200);
    expect(db.begins).toBe(0);
  });

  it('commits a run that outlived handlerTimeoutMs once it ends: 503 first, a duplicate after', async () => {
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, transactions: db, handlerTimeoutMs: 50 });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.code));
    let finish: () => void = () => {};
    const slow = new Promise<void>((resolve) => {
      finish = resolve;
    });
    webhooks.on('image.created', async (event, { transaction }) => {
      await slow;
      transaction.insert(event.id);
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    const first = await post(webhooks, event);
    expect(first.status).toBe(503);
    expect(code(first.body)).toBe('HANDLER_TIMEOUT');
    expect((await post(webhooks, event)).status).toBe(409);
    finish();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(JSON.parse((await post(webhooks, event)).body)).toEqual({ received: true, duplicate: true });
    expect(db.rows).toEqual([event.id]);
    expect(errors).toEqual(['HANDLER_TIMEOUT', 'IN_FLIGHT']);
  });

  it('refuses store and transactions together, and a transactions object without begin()', () => {
    const db = new MapDatabase();
    expect(() => new Webhooks({ secret: SECRET, transactions: db, store: false })).not.toThrow();
    expect(
      () =>
        new Webhooks({
          secret: SECRET,
          transactions: db,
          store: { claim: async () => 'claimed', complete: async () => {}, release: async () => {} },
        }),
    ).toThrow(/either store or transactions/);
    expect(() => new Webhooks({ secret: SECRET, transactions: {} as EventTransactions })).toThrow(/begin\(\)/);
  });

  it('names the transactions in console.log, and types context.transaction from the option', () => {
    const { webhooks } = setup();
    expect(
      String((webhooks as unknown as Record<symbol, () => string>)[Symbol.for('nodejs.util.inspect.custom')]?.()),
    ).toContain('transactions: MapDatabase');
    webhooks.on('quota.warned', (_event, context) => {
      expectTypeOf(context.transaction).toEqualTypeOf<Tx>();
      expectTypeOf(context).toMatchTypeOf<TransactionalHandlerContext<unknown, Tx>>();
    });
    new Webhooks({ secret: SECRET }).on('quota.warned', (_event, context) => {
      expectTypeOf(context.transaction).toEqualTypeOf<unknown>();
    });
  });
});

describe('transactional mode: in a queue worker', () => {
  const job = (attempt = 1): QueuedRun => ({ engine: 'map', jobId: 'job-1', attempt, maxAttempts: 3, queuedAt: 0 });
  const delivery = (event = createTestEvent('image.created', { id: 'img_1' })) => ({
    event,
    deliveryId: 'dlv_1',
    timestamp: 1,
  });

  it('runs the job in the transaction and commits; a job run again after the commit runs nothing', async () => {
    const { db, webhooks } = setup();
    let runs = 0;
    webhooks.on('image.created', (event, context) => {
      runs += 1;
      expect(context.job?.engine).toBe('map');
      context.transaction.insert(event.id);
    });
    const queued = delivery();
    await webhooks.process(queued, job());
    await webhooks.process(queued, job(2));
    expect(runs).toBe(1);
    expect(db.rows).toEqual([queued.event.id]);
  });

  it('rolls back and rejects with the handler error; rejects while another transaction holds the event', async () => {
    const { db, webhooks, errors } = setup();
    const failure = new Error('boom');
    webhooks.on('image.created', (event, { transaction }) => {
      transaction.insert(event.id);
      throw failure;
    });
    const queued = delivery();
    await expect(webhooks.process(queued, job())).rejects.toBe(failure);
    expect(db.rows).toEqual([]);
    expect(db.rollbacks).toBe(1);
    db.locked.add(queued.event.id);
    await expect(webhooks.process(queued, job(2))).rejects.toMatchObject({ code: 'IN_FLIGHT' });
    expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED', 'IN_FLIGHT']);
  });

  it('resolves when the commit resolves with a CommitReadBack, telling onError the answer was lost', async () => {
    const { db, webhooks, errors } = setup();
    webhooks.on('image.created', () => {});
    db.commitAnswer = { answerLost: new Error('timed out') } satisfies CommitReadBack;
    await webhooks.process(delivery(), job());
    expect(errors.map((error) => error.code)).toEqual(['STORE_UNAVAILABLE']);
    expect(errors[0]?.message).toMatch(/was lost, but the event's record was read back/);
    expect(db.processed.size).toBe(1);
  });

  it('rejects with STORE_UNAVAILABLE when the commit fails, and reports a failed rollback', async () => {
    const { db, webhooks, errors } = setup();
    webhooks.on('image.created', () => {});
    db.failCommit = new Error('commit lost');
    await expect(webhooks.process(delivery(), job())).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    db.failCommit = undefined;
    const other = new Webhooks({ secret: SECRET, transactions: db });
    const seen: string[] = [];
    other.onError((error) => void seen.push(error.code));
    other.on('image.created', () => {
      throw new Error('x');
    });
    db.failRollback = new Error('rollback lost');
    await expect(other.process(delivery(createTestEvent('image.created', { id: 'img_2' })), job())).rejects.toThrow(
      'x',
    );
    expect(seen).toEqual(['STORE_UNAVAILABLE', 'HANDLER_FAILED']);
    expect(errors.map((error) => error.code)).toEqual(['STORE_UNAVAILABLE']);
  });
});
