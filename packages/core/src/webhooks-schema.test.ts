/**
 * `on(type, { schema }, handler)` with Standard Schema validators (zod 4, valibot 1, arktype 2 and
 * one written by hand): the handler runs on the validated value; an event that fails the schema
 * skips that handler only, is acknowledged and recorded as processed, and is reported as
 * SCHEMA_MISMATCH (quoted safely: the issues quote the event). Inline, transactional and queued
 * modes, and replays from the archive.
 */
import { type } from 'arktype';
import * as v from 'valibot';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type BegunEvent,
  type ErrorContext,
  type EventTransactions,
  isFinalFailure,
  MemoryArchive,
  type QueuedDelivery,
  type QueuedRun,
  SchemaMismatchError,
  type StandardSchemaV1,
  type WebhookEvent,
  type WebhookQueue,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_schema_seam_3d4e';

afterEach(() => {
  vi.restoreAllMocks();
});

type AnyTestEvent = WebhookEvent<string, object>;

function post(webhooks: Webhooks, event: AnyTestEvent) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return webhooks.handle({ method: 'POST', headers, body });
}

interface Heard {
  error: WebhookVerificationError;
  context: ErrorContext;
}

function listen(webhooks: Webhooks): Heard[] {
  const heard: Heard[] = [];
  webhooks.onError((error, context) => void heard.push({ error, context }));
  return heard;
}

/** Untrusted text in the payload: a terminal escape and a right-to-left override. */
const HOSTILE = 'x\u001b[2J\u202eevil';
const VALID = { id: 'img_1', bytes: 10, tags: { colour: 'red' } };
/** What each schema makes of VALID: bytes doubled (a transform), status defaulted. */
const VALIDATED = { id: 'img_1', bytes: 20, status: 'active', tags: { colour: 'red' } };
/** Fails every schema: bytes is a string, and a tag's key and value are hostile. */
const INVALID = { id: 'img_2', bytes: HOSTILE, tags: { [HOSTILE]: 5 } };

const LIBRARIES = [
  {
    name: 'zod 4',
    schema: z.object({
      id: z.string(),
      bytes: z.number().transform((n) => n * 2),
      status: z.string().default('active'),
      tags: z.record(z.string(), z.string()),
    }),
  },
  {
    name: 'valibot 1',
    schema: v.object({
      id: v.string(),
      bytes: v.pipe(
        v.number(),
        v.transform((n) => n * 2),
      ),
      status: v.optional(v.string(), 'active'),
      tags: v.record(v.string(), v.string()),
    }),
  },
  {
    name: 'arktype 2',
    schema: type({
      id: 'string',
      bytes: type('number').pipe((n) => n * 2),
      status: "string = 'active'",
      tags: 'Record<string, string>',
    }),
  },
] as const;

/** The control and bidi characters a message must never carry as themselves. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

for (const { name, schema } of LIBRARIES) {
  describe(`on(type, { schema }, handler) with ${name}`, () => {
    it('runs the handler on the validated value', async () => {
      const webhooks = new Webhooks({ secret: SECRET });
      const heard = listen(webhooks);
      const objects: unknown[] = [];
      webhooks.on('image.created', { schema }, (event) => void objects.push(event.data.object));
      const event = createTestEvent('image.created', VALID);
      expect((await post(webhooks, event)).body).toBe('{"received":true}');
      expect(objects).toEqual([VALIDATED]);
      expect(heard).toEqual([]);
    });

    it('skips only that handler on a mismatch, acknowledges the event, and reports the issues quoted safely', async () => {
      const webhooks = new Webhooks({ secret: SECRET });
      const heard = listen(webhooks);
      const ran: string[] = [];
      webhooks.on('image.created', () => void ran.push('before'));
      webhooks.on('image.created', { schema }, function indexImage() {
        ran.push('validated');
      });
      webhooks.on(['image.created', 'image.deleted'], () => void ran.push('after'));
      const event = createTestEvent('image.created', INVALID);
      expect((await post(webhooks, event)).body).toBe('{"received":true}');
      expect(ran).toEqual(['before', 'after']);
      // Recorded as processed: a redelivery is a duplicate, and runs nothing.
      const again = await post(webhooks, event);
      expect(again.status).toBe(200);
      expect(again.body).not.toBe('{"received":true}');
      expect(ran).toEqual(['before', 'after']);

      expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH']);
      const [{ error, context }] = heard as [Heard];
      expect(context).toMatchObject({ event: { id: event.id }, secret: { index: 0 } });
      expect(error.status).toBe(200);
      expect(isFinalFailure(error)).toBe(true);
      const cause = error.cause as SchemaMismatchError;
      expect(cause).toBeInstanceOf(SchemaMismatchError);
      expect(cause.name).toBe('SchemaMismatchError');
      expect(cause.issues.length).toBeGreaterThanOrEqual(2);
      expect(
        cause.issues.map((issue) => [...(issue.path ?? [])].map((p) => (typeof p === 'object' ? p.key : p))),
      ).toContainEqual(['bytes']);
      expect(error.message).toMatch(
        new RegExp(
          `^The data\\.object of image\\.created event ${event.id} does not match the schema of handler "indexImage", which was skipped: "data\\.object\\.bytes": "`,
        ),
      );
      expect(error.message).toContain('data.object.tags.x\\u001b[2J\\u202eevil');
      for (const text of [error.message, cause.message]) expect(text).not.toMatch(UNSAFE);
      expect(cause.message).toMatch(/^data\.object failed the schema: "data\.object\.bytes": /);
    });
  });
}

/** A Standard Schema written by hand whose validate answers a promise. */
function asyncSchema(): StandardSchemaV1<unknown, { id: string; checked: true }> {
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: async (value) => {
        await new Promise((resolve) => setImmediate(resolve));
        const id = (value as { id?: unknown }).id;
        return typeof id === 'string'
          ? { value: { id, checked: true } }
          : { issues: [{ message: 'id must be a string', path: [{ key: 'id' }] }] };
      },
    },
  };
}

describe('schemas: validators', () => {
  it('waits for an async validator, both outcomes, among sync and async handlers', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const heard = listen(webhooks);
    const ran: unknown[] = [];
    webhooks.on('image.created', async () => {
      await new Promise((resolve) => setImmediate(resolve));
      ran.push('async first');
    });
    webhooks.on('image.created', { schema: asyncSchema() }, (event) => void ran.push(event.data.object));
    webhooks.on('image.created', { schema: z.object({ id: z.string() }) }, () => void ran.push('zod'));
    webhooks.on('image.created', () => void ran.push('last'));
    expect((await post(webhooks, createTestEvent('image.created', { id: 'img_9' }))).status).toBe(200);
    expect(ran).toEqual(['async first', { id: 'img_9', checked: true }, 'zod', 'last']);
    ran.length = 0;
    expect((await post(webhooks, createTestEvent('image.created', { id: 9 }))).body).toBe('{"received":true}');
    expect(ran).toEqual(['async first', 'last']);
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH', 'SCHEMA_MISMATCH']);
    expect(heard[0]?.error.message).toContain('"data.object.id": "id must be a string"');
    expect(heard[0]?.error.message).toContain('handler without a name');
  });

  it('passes the event itself when the validator answers the object it was given', async () => {
    const same: StandardSchemaV1 = {
      '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value }) },
    };
    const webhooks = new Webhooks({ secret: SECRET });
    const events: unknown[] = [];
    webhooks.on('image.created', (event) => void events.push(event));
    webhooks.on('image.created', { schema: same }, (event) => void events.push(event));
    expect((await post(webhooks, createTestEvent('image.created'))).status).toBe(200);
    expect(events).toHaveLength(2);
    expect(events[1]).toBe(events[0]);
  });

  it('a sync schema failing after an async handler', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const heard = listen(webhooks);
    const ran: string[] = [];
    webhooks.on('image.created', async () => void ran.push('async'));
    webhooks.on('image.created', { schema: v.object({ id: v.number() }) }, () => void ran.push('skipped'));
    webhooks.on('image.created', () => void ran.push('last'));
    expect((await post(webhooks, createTestEvent('image.created', { id: 'img_1' }))).status).toBe(200);
    expect(ran).toEqual(['async', 'last']);
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH']);
  });

  it('describes at most five issues, each cut at 200 characters, with any path segment', async () => {
    const issues: StandardSchemaV1.Issue[] = [
      { message: 'm'.repeat(300), path: ['a'] },
      { message: 'symbol key', path: [Symbol('s'), 0] },
      { message: 'no path' },
      { message: undefined as unknown as string, path: [{ key: 'k' }] },
      { message: 'five', path: ['e'] },
      { message: 'six', path: ['f'] },
      { message: 'seven', path: ['g'] },
    ];
    const many: StandardSchemaV1 = { '~standard': { version: 1, vendor: 'test', validate: () => ({ issues }) } };
    const webhooks = new Webhooks({ secret: SECRET });
    const heard = listen(webhooks);
    webhooks.on('image.created', { schema: many }, () => {});
    await post(webhooks, createTestEvent('image.created'));
    const cause = heard[0]?.error.cause as SchemaMismatchError;
    expect(cause.issues).toBe(issues);
    expect(cause.message).toBe(
      `data.object failed the schema: "data.object.a": "${'m'.repeat(200)}"; "data.object.Symbol(s).0": "symbol key"; "data.object": "no path"; "data.object.k": ""; "data.object.e": "five" (and 2 more)`,
    );
  });

  it('logs a mismatch nobody listens for, escaped, as a warning (console.error, or logger.warn)', async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', { schema: LIBRARIES[0].schema }, () => {});
    expect((await post(webhooks, createTestEvent('image.created', INVALID))).status).toBe(200);
    expect(printed).toHaveBeenCalledTimes(1);
    // The line only: the cause's issues quote the event as it came (console.error would print them raw).
    expect(printed.mock.calls[0]).toHaveLength(1);
    const [line] = printed.mock.calls[0] as [string];
    expect(line).toMatch(
      /^pixhook: SCHEMA_MISMATCH \(image\.created evt_test_\w+, delivery [\w-]+\): The data\.object/,
    );
    expect(line).toContain('"data.object.tags.x\\u001b[2J\\u202eevil"');
    expect(line).not.toMatch(UNSAFE);
    printed.mockClear();

    const warned: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => void warned.push(args), error: () => {} };
    const logged = new Webhooks({ secret: SECRET, logger });
    logged.on('image.created', { schema: LIBRARIES[0].schema }, () => {});
    expect((await post(logged, createTestEvent('image.created', INVALID))).status).toBe(200);
    expect(warned).toHaveLength(1);
    const [fields, message] = warned[0] as [Record<string, unknown>, string];
    expect(fields).toMatchObject({ code: 'SCHEMA_MISMATCH', status: 200, eventType: 'image.created' });
    expect(fields.err).toBeInstanceOf(SchemaMismatchError);
    expect(message).toMatch(/^pixhook: SCHEMA_MISMATCH: The data\.object/);
    expect(printed).not.toHaveBeenCalled();
  });

  it('refuses bad options', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const handler = () => {};
    const expectTypeError = (register: () => unknown, message: RegExp) => {
      expect(register).toThrow(TypeError);
      expect(register).toThrow(message);
    };
    expectTypeError(
      () => webhooks.on('image.created', { schema: 5 as never }, handler),
      /^pixhook: on\(type, \{ schema \}, handler\): schema must be a Standard Schema v1 validator .*; got the number 5\.$/,
    );
    for (const schema of [{}, { '~standard': { version: 2, validate: () => ({}) } }, { '~standard': null }]) {
      expectTypeError(() => webhooks.on('image.created', { schema: schema as never }, handler), /schema must be/);
    }
    expectTypeError(
      () => webhooks.on('image.created', { shema: z.string() } as never, handler),
      /^pixhook: on\(type, options, handler\): unknown option "shema"; it takes schema/,
    );
    expectTypeError(
      () => webhooks.on('image.created', z.object({ id: z.string() }) as never, handler),
      /^pixhook: on\(type, options, handler\): options is a schema itself; pass it as \{ schema \}\.$/,
    );
    expectTypeError(
      () => webhooks.on('image.created', null as never, handler),
      /^pixhook: on\(type, options, handler\): options must be an object such as \{ schema \}; got null\.$/,
    );
    expectTypeError(
      () => webhooks.on('image.created', { schema: z.string() } as never),
      /^pixhook: on\(type, handler\) needs a handler function\.$/,
    );
    expectTypeError(
      () => webhooks.on('image.created', { schema: z.string() }, 'handler' as never),
      /^pixhook: on\(type, options, handler\) needs a handler function\.$/,
    );
    // No schema: the handler runs on the event as it came.
    expect(() => webhooks.on('image.created', {}, handler)).not.toThrow();
  });

  it('runs a handler registered with options but no schema on the event as received', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen: unknown[] = [];
    webhooks.on('image.created', { schema: undefined }, (event) => void seen.push(event.data.object));
    await post(webhooks, createTestEvent('image.created', { id: 5 }));
    expect(seen).toEqual([{ id: 5 }]);
  });
});

/** A transactional database in a Map, as in webhooks-transactions.test.ts. */
class MapDatabase implements EventTransactions<{ staged: string[] }> {
  readonly rows: string[] = [];
  readonly processed = new Set<string>();
  commits = 0;
  rollbacks = 0;
  async begin(eventId: string, options?: { replay?: boolean }): Promise<BegunEvent<{ staged: string[] }>> {
    if (this.processed.has(eventId) && !options?.replay) return { state: 'completed' };
    const transaction = { staged: [] as string[] };
    return {
      state: 'claimed',
      transaction,
      commit: async () => {
        this.commits += 1;
        this.rows.push(...transaction.staged);
        this.processed.add(eventId);
      },
      rollback: async () => {
        this.rollbacks += 1;
      },
    };
  }
}

/** One job per event id, like a real engine. */
class MapQueue implements WebhookQueue {
  readonly jobs = new Map<string, QueuedDelivery>();
  enqueue(delivery: QueuedDelivery): Promise<void> {
    if (!this.jobs.has(delivery.event.id)) this.jobs.set(delivery.event.id, structuredClone(delivery));
    return Promise.resolve();
  }
}

const FIRST: QueuedRun = { engine: 'map', jobId: 'job-1', attempt: 1, maxAttempts: 5, queuedAt: 1_700_000_000_000 };
const STRICT = z.object({ id: z.number() });

describe('schemas: modes', () => {
  it('transactional: the other handlers commit, and the event is processed', async () => {
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, transactions: db });
    const heard = listen(webhooks);
    webhooks.on('image.created', { schema: STRICT }, ({ data }, { transaction }) => {
      transaction.staged.push(`strict ${data.object.id}`);
    });
    webhooks.on('image.created', (event, { transaction }) => void transaction.staged.push(`row ${event.id}`));
    const event = createTestEvent('image.created', { id: 'img_1' });
    expect((await post(webhooks, event)).body).toBe('{"received":true}');
    expect(db.rows).toEqual([`row ${event.id}`]);
    expect([db.commits, db.rollbacks]).toEqual([1, 0]);
    expect((await post(webhooks, event)).body).not.toBe('{"received":true}');
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH']);
  });

  it('queued: the worker runs the others, then fails for good as a dead letter', async () => {
    const queue = new MapQueue();
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, queue, archive } satisfies WebhooksOptions);
    const heard = listen(webhooks);
    const ran: string[] = [];
    webhooks.on('image.created', { schema: STRICT }, () => void ran.push('strict'));
    webhooks.on('image.created', () => void ran.push('other'));
    const event = createTestEvent('image.created', { id: 'img_1' });
    expect((await post(webhooks, event)).status).toBe(202);
    const failure = await webhooks.process(queue.jobs.get(event.id) as QueuedDelivery, FIRST).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(ran).toEqual(['other']);
    expect(failure).toMatchObject({ code: 'SCHEMA_MISMATCH' });
    expect(isFinalFailure(failure)).toBe(true);
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH']);
    expect(heard[0]?.context.job).toEqual(FIRST);
    const timeline = (await archive.get(event.id))?.timeline ?? [];
    expect(timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual(['delivery:queued', 'job:dead-letter']);
    expect(timeline[1]).toMatchObject({ runs: [{ ok: false }, { ok: true }] });
    expect((timeline[1] as { runs: readonly { error?: string }[] }).runs[0]?.error).toMatch(
      /^WebhookVerificationError: The data\.object of image\.created/,
    );

    // A handler's own failure is not final: the engine retries it.
    const other = new Webhooks({ secret: SECRET, queue });
    other.onError(() => {});
    other.on('image.created', () => {
      throw new Error('database down');
    });
    const own = await other.process(queue.jobs.get(event.id) as QueuedDelivery, FIRST).catch((error: unknown) => error);
    expect(own).toEqual(new Error('database down'));
    expect(isFinalFailure(own)).toBe(false);
    expect(isFinalFailure(undefined)).toBe(false);
  });

  it('queued and transactional: the worker rolls back on a mismatch, so a retried dead letter runs everything', async () => {
    const queue = new MapQueue();
    const db = new MapDatabase();
    const webhooks = new Webhooks({ secret: SECRET, queue, transactions: db });
    const heard = listen(webhooks);
    webhooks.on('image.created', { schema: STRICT }, () => {});
    webhooks.on('image.created', (event, { transaction }) => void transaction.staged.push(`row ${event.id}`));
    const event = createTestEvent('image.created', { id: 'img_1' });
    expect((await post(webhooks, event)).status).toBe(202);
    await expect(webhooks.process(queue.jobs.get(event.id) as QueuedDelivery, FIRST)).rejects.toMatchObject({
      code: 'SCHEMA_MISMATCH',
    });
    expect([db.commits, db.rollbacks, db.rows.length]).toEqual([0, 1, 0]);
    expect(db.processed.has(event.id)).toBe(false);
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH']);
  });

  it('replay: skips the failing handler, reports it, runs the others', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: SECRET, archive });
    const heard = listen(webhooks);
    const ran: string[] = [];
    webhooks.on('image.created', { schema: STRICT }, function strict() {
      ran.push('strict');
    });
    webhooks.on('image.created', function other() {
      ran.push('other');
    });
    const event = createTestEvent('image.created', { id: 'img_1' });
    expect((await post(webhooks, event)).status).toBe(200);
    const result = await webhooks.replay(event.id);
    expect(result).toEqual({ eventId: event.id, outcome: 'processed' });
    expect(ran).toEqual(['other', 'other']);
    expect(heard.map(({ error }) => error.code)).toEqual(['SCHEMA_MISMATCH', 'SCHEMA_MISMATCH']);
    const timeline = (await archive.get(event.id))?.timeline ?? [];
    expect(timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
      'delivery:processed',
      'replay:processed',
    ]);
    for (const entry of timeline) {
      expect((entry as { runs: readonly unknown[] }).runs).toEqual([
        expect.objectContaining({
          handler: 'strict',
          ok: false,
          error: expect.stringMatching(/SCHEMA_MISMATCH|does not match/),
        }),
        expect.objectContaining({ handler: 'other', ok: true }),
      ]);
    }
  });
});
