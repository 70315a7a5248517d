/**
 * The ordering guard: a guarded handler runs only for an event at least as new as the newest seen
 * for its key (the version, the event's `created` by default; on a tie the greater event id), so a
 * late retry of an old event never rolls the app's state back. Inline with a MemoryStore, in a
 * transaction (the mark commits with it), and in a queue worker (at processing time). The property
 * test delivers random interleavings of events, duplicates and failed attempts, and checks that the
 * final state is the in-order run's. `@pixhook/redis` and `@pixhook/postgres` run the same rule on
 * real servers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AnyEvent,
  type BegunEvent,
  type EventTransactions,
  type IdempotencyStore,
  MemoryStore,
  type QueuedRun,
  Webhooks,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_ordering_guard_7c8d';
const BY_IMAGE = { key: (event: { data: { object: Record<string, unknown> } }) => `image:${event.data.object.id}` };

type Event = ReturnType<typeof createTestEvent>;

function event(type: 'image.created' | 'image.deleted', image: string, created: number, id?: string): Event {
  return createTestEvent(type, { id: image }, { created, ...(id === undefined ? {} : { id }) });
}

async function send(webhooks: Webhooks, sent: Event, tenant?: string) {
  const { status, body } = await webhooks.handle({
    method: 'POST',
    ...createSignedRequest(sent, { secret: SECRET }),
    ...(tenant === undefined ? {} : { tenant }),
  });
  return { status, body };
}

/** An app whose state per image is the last event its guarded handler applied. */
function app(options: Partial<ConstructorParameters<typeof Webhooks>[0]> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options } as ConstructorParameters<typeof Webhooks>[0]);
  const state = new Map<string, string>();
  const errors: WebhookVerificationError[] = [];
  webhooks.onError((error) => void errors.push(error));
  return { webhooks, state, errors };
}

describe('the ordering guard, inline', () => {
  it('skips a handler for an event older than the newest seen with its key, and acknowledges it', async () => {
    const { webhooks, state, errors } = app();
    webhooks.on(['image.created', 'image.deleted'], { ordering: BY_IMAGE }, (e) => {
      state.set(String(e.data.object.id), e.type);
    });
    const created = event('image.created', 'img_1', 1_000);
    const deleted = event('image.deleted', 'img_1', 1_060);
    expect((await send(webhooks, deleted)).status).toBe(200);
    // The create, retried late, arrives after the delete: acknowledged, not applied.
    expect((await send(webhooks, created)).status).toBe(200);
    expect(state.get('img_1')).toBe('image.deleted');
    expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
    expect(errors[0]?.message).toContain(`Event ${created.id} (image.created, version 1000)`);
    expect(errors[0]?.message).toContain('"image:img_1"');
    // Another image is not held back by it.
    expect((await send(webhooks, event('image.created', 'img_2', 900))).status).toBe(200);
    expect(state.get('img_2')).toBe('image.created');
  });

  it('breaks a tie on the version with the greater event id, whatever arrives first', async () => {
    for (const order of [
      ['evt_a', 'evt_b'],
      ['evt_b', 'evt_a'],
    ]) {
      const { webhooks, state } = app();
      const applied: string[] = [];
      webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => {
        state.set('img_1', e.id);
        applied.push(e.id);
      });
      for (const id of order) await send(webhooks, event('image.created', 'img_1', 500, id));
      expect(state.get('img_1')).toBe('evt_b');
    }
  });

  it('does not guard an event without a key or a version, and moves no mark for it', async () => {
    const { webhooks, state, errors } = app({
      ordering: {
        key: (e) => (typeof e.data.object.id === 'string' ? `image:${e.data.object.id}` : undefined),
        version: (e) => (typeof e.data.object.version === 'number' ? e.data.object.version : undefined),
      },
    });
    webhooks.on('image.created', (e) => void state.set(String(e.data.object.id ?? 'none'), e.id));
    const versioned = (version: number | undefined, id: string) =>
      createTestEvent('image.created', { id: 'img_1', ...(version === undefined ? {} : { version }) }, { id });
    await send(webhooks, versioned(5, 'evt_5'));
    // No version: runs, and the mark stays at 5.
    await send(webhooks, versioned(undefined, 'evt_none'));
    expect(state.get('img_1')).toBe('evt_none');
    await send(webhooks, versioned(4, 'evt_4'));
    expect(state.get('img_1')).toBe('evt_none');
    expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
    // No key: runs.
    await send(webhooks, createTestEvent('image.created', {}, { id: 'evt_nokey' }));
    expect(state.get('none')).toBe('evt_nokey');
  });

  it('runs a retry of the newest event again (the same event is not stale)', async () => {
    const { webhooks, state } = app();
    let fail = true;
    webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => {
      if (fail) throw new Error('down');
      state.set('img_1', e.id);
    });
    const newest = event('image.created', 'img_1', 2_000);
    expect((await send(webhooks, newest)).status).toBe(500);
    // Meanwhile an older one: its mark is behind the failed newest one.
    fail = false;
    expect((await send(webhooks, event('image.created', 'img_1', 1_000))).status).toBe(200);
    expect(state.has('img_1')).toBe(false);
    expect((await send(webhooks, newest)).status).toBe(200);
    expect(state.get('img_1')).toBe(newest.id);
  });

  it("takes a handler's own ordering over the Webhooks-wide one, and ordering: false over both", async () => {
    const { webhooks } = app({ ordering: { key: () => 'everything' } });
    const ran: string[] = [];
    webhooks.on('image.created', (e) => void ran.push(`global:${e.id}`));
    webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => void ran.push(`own:${e.id}`));
    webhooks.on('image.created', { ordering: false }, (e) => void ran.push(`none:${e.id}`));
    await send(webhooks, event('image.created', 'img_1', 100, 'evt_1'));
    await send(webhooks, event('image.created', 'img_2', 50, 'evt_2'));
    expect(ran).toEqual(['global:evt_1', 'own:evt_1', 'none:evt_1', 'own:evt_2', 'none:evt_2']);
  });

  it('keeps marks per tenant', async () => {
    const { webhooks, state } = app({ secret: () => SECRET });
    webhooks.on('image.created', { ordering: BY_IMAGE }, (e, { tenant }) => void state.set(`${tenant}`, e.id));
    await send(webhooks, event('image.created', 'img_1', 200, 'evt_new'), 'a');
    await send(webhooks, event('image.created', 'img_1', 100, 'evt_old'), 'b');
    expect([state.get('a'), state.get('b')]).toEqual(['evt_new', 'evt_old']);
  });

  it('needs a store that keeps marks: store false throws, a store without advance() answers 503', async () => {
    expect(() => new Webhooks({ secret: SECRET, store: false, ordering: BY_IMAGE })).toThrow(/ordering guard/);
    const bare = new Webhooks({ secret: SECRET, store: false });
    expect(() => bare.on('image.created', { ordering: BY_IMAGE }, () => {})).toThrow(/store: false/);
    for (const bad of [{ key: 'id' }, { key: () => 'k', version: 3 }, { key: () => 'k', order: 1 }, 5]) {
      expect(() => bare.on('image.created', { ordering: bad } as never, () => {})).toThrow(TypeError);
    }
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: async () => {},
      release: async () => {},
    };
    const { webhooks } = app({ store });
    let ran = 0;
    webhooks.on('image.created', { ordering: BY_IMAGE }, () => void ran++);
    const answer = await send(webhooks, event('image.created', 'img_1', 1));
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.code).toBe('STORE_UNAVAILABLE');
    expect(ran).toBe(0);
    // A store whose advance() fails: 503 too, and the service retries.
    const failing = new MemoryStore();
    failing.advance = async () => {
      throw new Error('down');
    };
    const second = app({ store: failing });
    second.webhooks.on('image.created', { ordering: BY_IMAGE }, () => {});
    expect((await send(second.webhooks, event('image.created', 'img_1', 1))).status).toBe(503);
  });
});

/** Transactions whose marks are staged with the transaction and kept only when it commits. */
class MarkingDatabase implements EventTransactions<{ key: string }> {
  readonly marks = new Map<string, { version: number; eventId: string }>();
  readonly processed = new Set<string>();
  readonly locked = new Set<string>();

  async begin(key: string): Promise<BegunEvent<{ key: string }>> {
    if (this.locked.has(key)) return { state: 'in-flight' };
    if (this.processed.has(key)) return { state: 'completed' };
    this.locked.add(key);
    const staged = new Map<string, { version: number; eventId: string }>();
    return {
      state: 'claimed',
      transaction: { key },
      advance: async (mark, version, eventId) => {
        const now = staged.get(mark) ?? this.marks.get(mark);
        if (now && (version < now.version || (version === now.version && eventId < now.eventId))) return 'stale';
        staged.set(mark, { version, eventId });
        return 'current';
      },
      commit: async () => {
        this.locked.delete(key);
        for (const [mark, value] of staged) this.marks.set(mark, value);
        this.processed.add(key);
      },
      rollback: async () => {
        this.locked.delete(key);
      },
    };
  }
}

describe('the ordering guard, transactional and queued', () => {
  it('moves the mark with the transaction: a rolled-back event leaves it', async () => {
    const database = new MarkingDatabase();
    const { webhooks, state } = app({ transactions: database });
    let fail = true;
    webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => {
      if (fail && e.created === 2_000) throw new Error('down');
      state.set('img_1', e.id);
    });
    const newest = event('image.created', 'img_1', 2_000);
    const older = event('image.created', 'img_1', 1_000);
    expect((await send(webhooks, newest)).status).toBe(500);
    expect(database.marks.size).toBe(0);
    // The newest rolled back: the older one is applied for now…
    expect((await send(webhooks, older)).status).toBe(200);
    expect(state.get('img_1')).toBe(older.id);
    fail = false;
    // …and the newest, retried, wins.
    expect((await send(webhooks, newest)).status).toBe(200);
    expect(state.get('img_1')).toBe(newest.id);
    expect(database.marks.get('image:img_1')).toEqual({ version: 2_000, eventId: newest.id });
  });

  it('decides in the worker, when the job runs: a job run after a newer one is skipped', async () => {
    const { webhooks, state, errors } = app({ queue: { enqueue: async () => {} }, store: new MemoryStore() });
    webhooks.on('image.created', { ordering: BY_IMAGE }, (e) => void state.set('img_1', e.id));
    const job = (attempt = 1): QueuedRun => ({ engine: 'test', jobId: 'j', attempt, maxAttempts: 3, queuedAt: 0 });
    const older = event('image.created', 'img_1', 1_000);
    const newer = event('image.created', 'img_1', 1_001);
    await webhooks.process({ event: newer as AnyEvent, deliveryId: 'd1', timestamp: 1 }, job());
    await webhooks.process({ event: older as AnyEvent, deliveryId: 'd2', timestamp: 1 }, job());
    expect(state.get('img_1')).toBe(newer.id);
    expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
    // A worker without a store cannot keep marks: the job fails (and is retried).
    const bare = app({ queue: { enqueue: async () => {} } });
    bare.webhooks.on('image.created', { ordering: BY_IMAGE }, () => {});
    await expect(
      bare.webhooks.process({ event: older as AnyEvent, deliveryId: 'd', timestamp: 1 }, job()),
    ).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
  });
});

describe('the ordering guard, property', () => {
  it('random interleavings of deliveries, duplicates and failed attempts end in the in-order state', async () => {
    const spec = fc.record({
      image: fc.constantFrom('img_a', 'img_b'),
      // Few distinct seconds: many ties, which the event id breaks.
      created: fc.integer({ min: 0, max: 3 }),
      type: fc.constantFrom('image.created' as const, 'image.deleted' as const),
      failures: fc.integer({ min: 0, max: 2 }),
      copies: fc.integer({ min: 1, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(spec, { minLength: 1, maxLength: 8, selector: (s) => JSON.stringify(s) }),
        fc.infiniteStream(fc.nat()),
        async (specs, picks) => {
          const events = specs.map((s, i) => ({
            ...s,
            event: event(s.type, s.image, s.created, `evt_${String.fromCharCode(97 + ((i * 5) % 26))}${i}`),
          }));
          const { webhooks, state } = app();
          const attempts = new Map<string, number>();
          webhooks.on(['image.created', 'image.deleted'], { ordering: BY_IMAGE }, (e) => {
            const made = (attempts.get(e.id) ?? 0) + 1;
            attempts.set(e.id, made);
            const failures = events.find((x) => x.event.id === e.id)?.failures ?? 0;
            if (made <= failures) throw new Error('transient');
            state.set(String(e.data.object.id), e.id);
          });
          // The service's deliveries: each event's copies (duplicates), in a random order; a failed
          // attempt is retried later, at a random place among what is left.
          const pending = events.flatMap((x) => Array.from({ length: x.copies }, () => x.event));
          const next = picks[Symbol.iterator]();
          while (pending.length > 0) {
            const [sent] = pending.splice((next.next().value as number) % pending.length, 1) as [Event];
            const { status } = await send(webhooks, sent);
            if (status !== 200) pending.splice((next.next().value as number) % (pending.length + 1), 0, sent);
          }
          // The in-order run: the newest (created, then id) event of each image is what stays.
          for (const image of ['img_a', 'img_b']) {
            const mine = events.filter((x) => x.image === image).map((x) => x.event);
            const newest = mine.sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : 1)).at(-1);
            expect(state.get(image)).toBe(newest?.id);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
