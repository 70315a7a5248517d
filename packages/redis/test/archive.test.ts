/** RedisArchive through its public API on a real redis-server: record/get, the outcome rule, list and paging, pruning, replays, a frozen Redis. */
import {
  type ArchivedDelivery,
  type ArchivedStep,
  type ArchiveEntry,
  INBOX_OUTCOMES,
  type InboxOutcome,
  type InboxQuery,
  type InboxSummary,
  outcomeAfter,
  Webhooks,
} from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { RedisArchive } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { Redis as IoRedis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENTS, type TestClient } from './helpers/clients.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newId = () => `evt_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
const newPrefix = (label: string) => `inbox-test:${label}:${globalThis.crypto.randomUUID().slice(0, 8)}`;

/** Waits until `check()` is true, polling; throws with `what` after `ms` (room for a busy machine). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

function delivery(eventId: string, over: Partial<ArchivedDelivery> = {}): ArchivedDelivery {
  return {
    kind: 'delivery',
    eventId,
    eventType: 'image.created',
    created: 1_700_000_000,
    deliveryId: `dlv_${globalThis.crypto.randomUUID()}`,
    timestamp: 1_700_000_000,
    at: Date.now(),
    body: new TextEncoder().encode(JSON.stringify({ id: eventId, type: 'image.created' })),
    headers: { 'content-type': 'application/json', 'x-service-signature': 't=1,v1=00' },
    secretIndex: 0,
    mode: 'inline',
    status: 200,
    result: 'processed',
    ms: 3,
    runs: [{ handler: 'onImage', ms: 2, ok: true }],
    ...over,
  };
}

function step(eventId: string, over: Partial<ArchivedStep> = {}): ArchivedStep {
  return {
    kind: 'job',
    eventId,
    eventType: 'image.created',
    at: Date.now(),
    result: 'processed',
    jobId: 'job-1',
    attempt: 1,
    maxAttempts: 5,
    ms: 4,
    runs: [{ handler: 'onImage', ms: 3, ok: true }],
    ...over,
  };
}

/** Every page of `query`, following `next`, checking each page's size. */
async function allPages(archive: RedisArchive, query: InboxQuery): Promise<InboxSummary[]> {
  const items: InboxSummary[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10_000; page += 1) {
    const result = await archive.list({ ...query, cursor });
    expect(result.items.length).toBeLessThanOrEqual(query.limit ?? 50);
    items.push(...result.items);
    if (result.next === undefined) return items;
    cursor = result.next;
  }
  throw new Error('more than 10,000 pages');
}

/** The inbox's order: lastAt descending, then event id descending (by bytes). */
function inboxOrder(a: { lastAt: number; eventId: string }, b: { lastAt: number; eventId: string }): number {
  if (a.lastAt !== b.lastAt) return b.lastAt - a.lastAt;
  return Buffer.compare(Buffer.from(b.eventId), Buffer.from(a.eventId));
}

describe('new RedisArchive(client, options)', () => {
  const io = new IoRedis({ lazyConnect: true });
  const node = createClient();

  it('tells the client libraries apart and refuses what is not a client, naming RedisArchive', () => {
    expect(new RedisArchive(io).clientKind).toBe('ioredis');
    expect(new RedisArchive(node).clientKind).toBe('node-redis');
    expect(() => new RedisArchive({} as never)).toThrow(/^pixhook: RedisArchive: the first argument must be/);
    const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:6379' }] });
    expect(() => new RedisArchive(cluster as never)).toThrow(/^pixhook: RedisArchive: node-redis cluster clients/);
  });

  it.each([
    [{ prefx: 'a' }, /has no option "prefx"\. Did you mean "prefix"\?/],
    [{ retention: 5 }, /has no option "retention"/],
    [{ prefix: '' }, /prefix must be a non-empty string without \{ or \}/],
    [{ prefix: 'a{b}' }, /prefix must be a non-empty string without \{ or \}.*got "a\{b\}"/],
    [{ prefix: 42 }, /prefix must be .*got the number 42/],
    [{ retentionMs: 0 }, /retentionMs must be a positive whole number of milliseconds/],
    [{ maxEvents: 1.5 }, /maxEvents must be a positive whole number, got the number 1.5/],
    [{ maxBytes: -1 }, /maxBytes must be a positive whole number/],
    [{ pruneIntervalMs: true }, /pruneIntervalMs must be a positive whole number/],
    [{ replayPollMs: '1000' }, /replayPollMs must be a positive whole number .*got the string "1000"/],
    [{ writeTimeoutMs: Number.NaN }, /writeTimeoutMs must be a positive whole number/],
    [{ onError: 'log' }, /onError must be a function/],
  ])('refuses the options %o when built', (options, message) => {
    expect(() => new RedisArchive(io, options as never)).toThrow(message);
    expect(() => new RedisArchive(io, options as never)).toThrow(TypeError);
  });

  it('refuses options that are not an object, and accepts every option in range', () => {
    expect(() => new RedisArchive(io, 'pixhook' as never)).toThrow(/^pixhook: RedisArchive: options must be an object/);
    expect(() => new RedisArchive(io, null as never)).toThrow(/options must be an object/);
    const archive = new RedisArchive(node, {
      prefix: 'p',
      retentionMs: 1,
      maxEvents: 1,
      maxBytes: 1,
      pruneIntervalMs: false,
      replayPollMs: 1,
      writeTimeoutMs: 1,
      onError: () => {},
    });
    expect(archive.writeTimeoutMs).toBe(1);
    expect(new RedisArchive(io).writeTimeoutMs).toBe(2_000);
  });

  // lazyConnect and never connected: a command sent would wait, not fail at once.
  const archive = new RedisArchive(io);

  it.each([
    ['not an object', 'evt_1', /record\(entry\) takes an archive entry, got a string/],
    ['no event id', { ...delivery('x'), eventId: '' }, /eventId must be a non-empty string/],
    ['a type that is not a string', { ...delivery('x'), eventType: 5 }, /eventType must be a string/],
    ['a time that is not one', { ...delivery('x'), at: '2024' }, /at must be a time in ms since the epoch/],
    ['an unknown kind', { ...delivery('x'), kind: 'retry' }, /kind must be 'delivery', 'job' or 'replay'/],
    ['a delivery result of a step', { ...delivery('x'), result: 'dead-letter' }, /a delivery entry has no result/],
    ['a step result of a delivery', step('x', { result: 'duplicate' as never }), /a job entry has no result/],
    ['a string body', { ...delivery('x'), body: 'text' }, /body must be a Uint8Array/],
    ['null headers', { ...delivery('x'), headers: null }, /headers must be an object/],
    ['no delivery id', { ...delivery('x'), deliveryId: undefined }, /deliveryId must be a non-empty string/],
    ['an unknown mode', { ...delivery('x'), mode: 'batch' }, /mode must be 'inline', 'transactional' or 'queued'/],
  ])('record() refuses %s before sending anything', async (_name, entry, message) => {
    await expect(archive.record(entry as never)).rejects.toThrow(message);
    await expect(archive.record(entry as never)).rejects.toThrow(/^pixhook: RedisArchive: record\(entry\)/);
  });

  it.each([
    ['a string', 'image.created', /the query must be an object/],
    ['an unknown filter', { kind: 'job' }, /list\(query\) has no option "kind"/],
    ['limit 0', { limit: 0 }, /limit must be a whole number from 1 to 500, got the number 0/],
    ['limit 501', { limit: 501 }, /limit must be a whole number from 1 to 500/],
    ['limit 2.5', { limit: 2.5 }, /limit must be a whole number/],
    ['an unknown outcome', { outcome: 'done' }, /outcome must be one of processed, failed, queued, dead-letter/],
    ['an empty type', { type: '' }, /type must be a non-empty string/],
    ['a date as since', { since: new Date() }, /since must be a time in ms/],
    ['a negative until', { until: -1 }, /until must be a time in ms/],
    ['a malformed cursor', { cursor: 'not a cursor' }, /cursor is not one this inbox gave/],
    [
      'a cursor of valid JSON but another shape',
      { cursor: Buffer.from('{"a":1}').toString('base64url') },
      /cursor is not one/,
    ],
    ['a cursor with a bad time', { cursor: Buffer.from('[-5,"x"]').toString('base64url') }, /cursor is not one/],
  ])('list() refuses %s with a TypeError', async (_name, query, message) => {
    const failure = archive.list(query as never);
    await expect(failure).rejects.toThrow(TypeError);
    await expect(archive.list(query as never)).rejects.toThrow(message);
    await expect(archive.list(query as never)).rejects.toThrow(/^pixhook: RedisArchive: list\(query\)/);
  });

  it('refuses bad arguments to get, requestReplay and attach', async () => {
    await expect(archive.get('')).rejects.toThrow(
      /^pixhook: RedisArchive: get\(eventId\): the event id must be a non-empty string/,
    );
    await expect(archive.requestReplay('evt_1' as never)).rejects.toThrow(/takes an array of event ids, got a string/);
    await expect(archive.requestReplay(['evt_1', 7] as never)).rejects.toThrow(
      /each event id must be a non-empty string/,
    );
    expect(() => archive.attach('replay' as never)).toThrow(/attach\(replay\) takes a function/);
  });
});

describeWithRedis('RedisArchive on a real redis-server', () => {
  let server: RedisServer;
  let admin: IoRedis;
  const connections: TestClient[] = [];
  const archives: RedisArchive[] = [];
  const connect = async (index: number) => {
    const connection = await CLIENTS[index]!.connect(server.port);
    connections.push(connection);
    return connection.client;
  };
  const open = async (index: number, options: ConstructorParameters<typeof RedisArchive>[1] = {}) => {
    const archive = new RedisArchive(await connect(index), { prefix: newPrefix('a'), ...options });
    archives.push(archive);
    return archive;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new IoRedis(server.port, '127.0.0.1');
  });
  afterAll(async () => {
    for (const archive of archives) await archive.close();
    for (const connection of connections) await connection.close();
    admin?.disconnect();
    await server?.close();
  });

  for (const [index, { name }] of CLIENTS.entries()) {
    it(`keeps the bytes and headers of the first delivery byte-exact, not UTF-8 too, and the whole timeline (${name})`, async () => {
      const archive = await open(index);
      const id = newId();
      // Every byte value, and sequences that are not UTF-8 (a lone continuation byte, a truncated
      // sequence, an overlong encoding, a surrogate): a text round trip would change them.
      const body = new Uint8Array([
        ...Array.from({ length: 256 }, (_, byte) => byte),
        0x80,
        0xe2,
        0x82,
        0xc0,
        0xaf,
        0xed,
        0xa0,
        0x80,
        0xff,
        0xfe,
      ]);
      const headers = { 'content-type': 'application/octet-stream', 'x-odd': 'ünï <b>"quoted"</b>', accept: 'a, b' };
      const first = delivery(id, { body, headers, result: 'failed', code: 'HANDLER_FAILED', at: 1_000_000 });
      await archive.record(first);
      const second = delivery(id, {
        body: new TextEncoder().encode('another body'),
        headers: { 'x-retry': '1' },
        result: 'processed',
        at: 1_000_500,
        created: undefined,
      });
      await archive.record(second, { a: 'transaction, ignored' });
      const job = step(id, { at: 1_000_900, error: 'TypeError: </script><script>alert(1)</script>' });
      await archive.record(job);

      const event = await archive.get(id);
      expect(event).toBeDefined();
      expect(Buffer.from(event!.body).equals(Buffer.from(body))).toBe(true);
      expect(event!.body).toBeInstanceOf(Uint8Array);
      expect(event!.headers).toEqual(headers);
      const { body: _b1, ...firstRow } = first;
      const { body: _b2, ...secondRow } = second;
      expect(event!.timeline).toEqual([firstRow, secondRow, job]);
      expect(event).toMatchObject({
        eventId: id,
        eventType: 'image.created',
        created: 1_700_000_000,
        firstAt: 1_000_000,
        lastAt: 1_000_900,
        outcome: 'processed',
        deliveries: 2,
        bytes: body.length,
        mode: 'inline',
      });
      expect(await archive.get(newId())).toBeUndefined();
    });
  }

  it('keeps an empty body, an event without created, and a step that came before its delivery', async () => {
    const archive = await open(0);
    const empty = newId();
    await archive.record(delivery(empty, { body: new Uint8Array(0), created: undefined, mode: 'transactional' }));
    const event = await archive.get(empty);
    expect(event).toMatchObject({ bytes: 0, created: undefined, mode: 'transactional' });
    expect(event!.body).toEqual(new Uint8Array(0));

    // A worker may finish before the delivery's own entry lands (queued mode writes both at once).
    const early = newId();
    await archive.record(step(early, { at: 2_000_100 }));
    expect(await archive.get(early)).toMatchObject({ deliveries: 0, mode: 'queued', bytes: 0, firstAt: 2_000_100 });
    const late = delivery(early, { mode: 'queued', result: 'queued', at: 2_000_000, status: 202 });
    await archive.record(late);
    const both = await archive.get(early);
    expect(both).toMatchObject({
      deliveries: 1,
      mode: 'queued',
      firstAt: 2_000_000,
      lastAt: 2_000_100,
      outcome: 'processed',
    });
    expect(Buffer.from(both!.body).toString()).toBe(Buffer.from(late.body).toString());
    // The timeline reads in time order, ties as written.
    expect(both!.timeline.map((row) => [row.kind, row.at])).toEqual([
      ['delivery', 2_000_000],
      ['job', 2_000_100],
    ]);
    await archive.record(step(early, { at: 2_000_100, result: 'failed' }));
    const tie = await archive.get(early);
    expect(tie!.timeline.map((row) => [row.at, row.result])).toEqual([
      [2_000_000, 'queued'],
      [2_000_100, 'processed'],
      [2_000_100, 'failed'],
    ]);

    // Deliveries written at once may land out of order: firstAt is the earliest, the body the first written.
    const racing = newId();
    await archive.record(delivery(racing, { at: 3_000_500, body: new TextEncoder().encode('first written') }));
    await archive.record(delivery(racing, { at: 3_000_000, body: new TextEncoder().encode('earlier') }));
    await archive.record(delivery(racing, { at: 3_000_900 }));
    const raced = await archive.get(racing);
    expect(raced).toMatchObject({ firstAt: 3_000_000, lastAt: 3_000_900, deliveries: 3 });
    expect(Buffer.from(raced!.body).toString()).toBe('first written');

    // A replay step of an event not kept creates it, as an inline one with no body.
    const replayed = newId();
    await archive.record(step(replayed, { kind: 'replay', jobId: undefined, attempt: undefined }));
    expect(await archive.get(replayed)).toMatchObject({ mode: 'inline', deliveries: 0, outcome: 'processed' });
  });

  it("applies outcomeAfter's rule to every outcome before and every entry, in get and in the outcome lists", async () => {
    const archive = await open(3);
    const entries: ((id: string) => ArchiveEntry)[] = [
      ...(['processed', 'duplicate', 'queued', 'in-flight', 'failed'] as const).map(
        (result) => (id: string) => delivery(id, { result }),
      ),
      ...(['processed', 'failed', 'dead-letter', 'queued'] as const).map(
        (result) => (id: string) => step(id, { result }),
      ),
      ...(['processed', 'failed', 'queued'] as const).map(
        (result) => (id: string) => step(id, { kind: 'replay', result }),
      ),
    ];
    const befores: (InboxOutcome | undefined)[] = [undefined, ...INBOX_OUTCOMES];
    const cases: { id: string; expected: InboxOutcome }[] = [];
    for (const before of befores) {
      for (const make of entries) {
        const id = newId();
        if (before !== undefined) await archive.record(step(id, { result: before, at: Date.now() - 1_000 }));
        const entry = make(id);
        await archive.record(entry);
        cases.push({ id, expected: outcomeAfter(before, entry) as InboxOutcome });
      }
    }
    for (const { id, expected } of cases) {
      expect((await archive.get(id))?.outcome).toBe(expected);
      const [item] = (await archive.list({ eventId: id })).items;
      expect(item?.outcome).toBe(expected);
    }
    // Each event is in its own outcome's list only.
    for (const outcome of INBOX_OUTCOMES) {
      const listed = new Set((await allPages(archive, { outcome, limit: 500 })).map((item) => item.eventId));
      for (const { id, expected } of cases) expect(listed.has(id)).toBe(expected === outcome);
    }
  });

  describe('list', () => {
    let archive: RedisArchive;
    /** What was recorded, as the list must show it. */
    const seeded: { eventId: string; eventType: string; lastAt: number; outcome: InboxOutcome; deliveryId: string }[] =
      [];
    const base = 1_700_000_000_000;

    beforeAll(async () => {
      archive = await open(0, { prefix: newPrefix('list') });
      const outcomes = ['processed', 'failed', 'queued', 'dead-letter'] as const;
      const writes: Promise<void>[] = [];
      for (let index = 0; index < 240; index += 1) {
        // Groups of three events at the same ms: the ties are ordered by event id.
        const lastAt = base + Math.floor(index / 3) * 1_000;
        const eventId = `evt_${(index * 7919) % 1000}_${index}`;
        const eventType = ['image.created', 'image.deleted', 'album.created'][index % 3]!;
        const outcome = outcomes[index % 4]!;
        const deliveryId = `dlv_${index}`;
        seeded.push({ eventId, eventType, lastAt, outcome, deliveryId });
        const entry =
          outcome === 'processed' || outcome === 'failed'
            ? delivery(eventId, { eventType, at: lastAt, deliveryId, result: outcome })
            : delivery(eventId, {
                eventType,
                at: outcome === 'queued' ? lastAt : lastAt - 500,
                deliveryId,
                result: 'queued',
                mode: 'queued',
              });
        writes.push(
          archive
            .record(entry)
            .then(() =>
              outcome === 'dead-letter'
                ? archive.record(step(eventId, { eventType, at: lastAt, result: outcome }))
                : undefined,
            ),
        );
      }
      await Promise.all(writes);
      seeded.sort(inboxOrder);
    });

    it('pages through everything newest first, ties by event id, with no duplicate or gap, at every page size', async () => {
      const expected = seeded.map((item) => item.eventId);
      for (const limit of [1, 7, 50, 239, 240, 500]) {
        const listed = await allPages(archive, { limit });
        expect(listed.map((item) => item.eventId)).toEqual(expected);
      }
      const first = await archive.list();
      expect(first.items).toHaveLength(50);
      expect(first.items[0]).toMatchObject({ eventId: seeded[0]!.eventId, lastAt: seeded[0]!.lastAt, deliveries: 1 });
    });

    it.each<[string, InboxQuery, (item: (typeof seeded)[number]) => boolean]>([
      ['type', { type: 'image.deleted' }, (item) => item.eventType === 'image.deleted'],
      ['outcome', { outcome: 'dead-letter' }, (item) => item.outcome === 'dead-letter'],
      [
        'type and outcome',
        { type: 'album.created', outcome: 'failed' },
        (item) => item.eventType === 'album.created' && item.outcome === 'failed',
      ],
      ['since', { since: base + 40_000 }, (item) => item.lastAt >= base + 40_000],
      ['until', { until: base + 40_000 }, (item) => item.lastAt < base + 40_000],
      [
        'since, until and type',
        { since: base + 10_000, until: base + 60_000, type: 'image.created' },
        (item) => item.lastAt >= base + 10_000 && item.lastAt < base + 60_000 && item.eventType === 'image.created',
      ],
      ['a type nothing has', { type: 'nothing.here' }, () => false],
    ])('filters by %s, across pages', async (_name, query, keep) => {
      const expected = seeded.filter(keep).map((item) => item.eventId);
      for (const limit of [3, 500]) {
        expect((await allPages(archive, { ...query, limit })).map((item) => item.eventId)).toEqual(expected);
      }
    });

    it('finds one event by its id or by one of its delivery ids, with the other filters applied', async () => {
      const target = seeded[17]!;
      expect((await archive.list({ eventId: target.eventId })).items.map((item) => item.eventId)).toEqual([
        target.eventId,
      ]);
      expect((await archive.list({ deliveryId: target.deliveryId })).items.map((item) => item.eventId)).toEqual([
        target.eventId,
      ]);
      const both = { eventId: target.eventId, deliveryId: target.deliveryId };
      expect((await archive.list(both)).items).toHaveLength(1);
      expect((await archive.list({ ...both, eventId: seeded[18]!.eventId })).items).toEqual([]);
      expect((await archive.list({ deliveryId: 'dlv_unknown' })).items).toEqual([]);
      expect((await archive.list({ eventId: 'evt_unknown' })).items).toEqual([]);
      expect((await archive.list({ eventId: target.eventId, type: 'other.type' })).items).toEqual([]);
      expect((await archive.list({ eventId: target.eventId, outcome: target.outcome })).items).toHaveLength(1);
      const other = INBOX_OUTCOMES.find((outcome) => outcome !== target.outcome);
      expect((await archive.list({ eventId: target.eventId, outcome: other })).items).toEqual([]);
      expect((await archive.list({ eventId: target.eventId, since: target.lastAt + 1 })).items).toEqual([]);
      expect((await archive.list({ eventId: target.eventId, until: target.lastAt })).items).toEqual([]);
      expect((await archive.list({ eventId: target.eventId, until: target.lastAt + 1 })).items).toHaveLength(1);
      // With a cursor: listed only when it comes after the cursor's position.
      const before = (await archive.list({ limit: 16 })).next!;
      const after = (await archive.list({ limit: 18 })).next!;
      expect((await archive.list({ eventId: target.eventId, cursor: before })).items).toHaveLength(1);
      expect((await archive.list({ eventId: target.eventId, cursor: after })).items).toEqual([]);
      // A cursor on an event of the same ms, with a greater id: it comes first.
      const tieBefore = (await archive.list({ limit: 17 })).next!;
      expect((await archive.list({ eventId: target.eventId, cursor: tieBefore })).items).toHaveLength(1);
      const later = (await archive.list({ limit: 21 })).next!;
      expect((await archive.list({ eventId: target.eventId, cursor: later })).items).toEqual([]);
      expect((await archive.list({ deliveryId: target.deliveryId, limit: 1 })).next).toBeUndefined();
    });

    it('goes on from where the cursor was when its event moved to the top or was pruned since', async () => {
      const prefix = newPrefix('moved');
      const mover = await open(0, { prefix });
      const ids = Array.from({ length: 30 }, (_, index) => `evt_move_${String(index).padStart(2, '0')}`);
      // Ten timestamps, three events each: the cursor's event is one of a tie.
      await Promise.all(ids.map((id, index) => mover.record(delivery(id, { at: base + Math.floor(index / 3) }))));
      const expected = ids.map((id, index) => ({ eventId: id, lastAt: base + Math.floor(index / 3) })).sort(inboxOrder);
      const first = await mover.list({ limit: 10 });
      expect(first.items.map((item) => item.eventId)).toEqual(expected.slice(0, 10).map((item) => item.eventId));
      // The page's last event gets a new entry: it moves to the top, the cursor still marks its old place.
      const moved = first.items[9]!.eventId;
      await mover.record(step(moved, { at: base + 1_000 }));
      const second = await mover.list({ limit: 10, cursor: first.next });
      expect(second.items.map((item) => item.eventId)).toEqual(expected.slice(10, 20).map((item) => item.eventId));
      // The cursor's event is gone (pruned, say): the next page starts right after its place too.
      const gone = second.items[9]!.eventId;
      await admin.zrem(`{${prefix}}:all`, gone);
      const third = await mover.list({ limit: 10, cursor: second.next });
      expect(third.items.map((item) => item.eventId)).toEqual(expected.slice(20, 30).map((item) => item.eventId));
      expect(third.next).toBeUndefined();
    });

    it('examines at most 5,000 events per call and returns a cursor to go on when the filters match few', async () => {
      const sparse = await open(1, { prefix: newPrefix('sparse'), writeTimeoutMs: 60_000 });
      // The one match is the oldest: both filter sets hold 6,001 events, so 5,000 examined find nothing.
      await sparse.record(delivery('evt_match', { eventType: 'wanted', result: 'failed', at: base }));
      for (let chunk = 0; chunk < 6; chunk += 1) {
        const writes: Promise<void>[] = [];
        for (let index = chunk * 1_000 + 1; index <= (chunk + 1) * 1_000; index += 1) {
          writes.push(sparse.record(delivery(`evt_w_${index}`, { eventType: 'wanted', at: base + index })));
          writes.push(
            sparse.record(delivery(`evt_o_${index}`, { eventType: 'other', result: 'failed', at: base + index })),
          );
        }
        await Promise.all(writes);
      }
      const first = await sparse.list({ type: 'wanted', outcome: 'failed' });
      expect(first.items).toEqual([]);
      expect(first.next).toBeDefined();
      const second = await sparse.list({ type: 'wanted', outcome: 'failed', cursor: first.next });
      expect(second.items.map((item) => item.eventId)).toEqual(['evt_match']);
      expect(second.next).toBeUndefined();
    });
  });

  describe('prune', () => {
    it('deletes the events past the retention, every key of theirs, and counts them', async () => {
      const prefix = newPrefix('retention');
      const archive = await open(4, { prefix, retentionMs: 60_000, pruneIntervalMs: false });
      const now = Date.now();
      const old = Array.from({ length: 5 }, newId);
      const fresh = Array.from({ length: 3 }, newId);
      for (const id of old) {
        await archive.record(delivery(id, { at: now - 120_000, eventType: 'old.type', deliveryId: `dlv_${id}` }));
        await archive.record(step(id, { at: now - 90_000, eventType: 'old.type', result: 'dead-letter' }));
      }
      for (const id of fresh) await archive.record(delivery(id, { at: now }));
      const bytesBefore = Number(await admin.get(`{${prefix}}:bytes`));
      expect(await archive.prune()).toBe(5);
      expect((await allPages(archive, {})).map((item) => item.eventId).sort()).toEqual([...fresh].sort());
      expect(await archive.get(old[0]!)).toBeUndefined();
      expect(await admin.exists(`{${prefix}}:e:${old[0]}`, `{${prefix}}:t:${old[0]}`, `{${prefix}}:b:${old[0]}`)).toBe(
        0,
      );
      expect(await admin.zcard(`{${prefix}}:type:old.type`)).toBe(0);
      expect(await admin.zcard(`{${prefix}}:outcome:dead-letter`)).toBe(0);
      expect(await admin.hlen(`{${prefix}}:idx`)).toBe(3);
      const bytesAfter = Number(await admin.get(`{${prefix}}:bytes`));
      expect(bytesAfter).toBeGreaterThan(0);
      expect(bytesAfter).toBeLessThan(bytesBefore);
      expect(await archive.prune()).toBe(0);
      // Each key of an event expires with the retention as a backstop.
      const ttl = await admin.pttl(`{${prefix}}:e:${fresh[0]}`);
      expect(ttl).toBeGreaterThan(50_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      expect(await admin.pttl(`{${prefix}}:t:${fresh[0]}`)).toBeGreaterThan(50_000);
      expect(await admin.pttl(`{${prefix}}:b:${fresh[0]}`)).toBeGreaterThan(50_000);
      // The summary stays a small hash, which Redis keeps compact (a listpack).
      expect(await admin.object('ENCODING', `{${prefix}}:e:${fresh[0]}`)).toBe('listpack');
    });

    it('keeps at most maxEvents, deleting the oldest, more than one batch of them', async () => {
      const prefix = newPrefix('max-events');
      const archive = await open(0, { prefix, maxEvents: 10, pruneIntervalMs: false });
      const now = Date.now();
      const ids = Array.from({ length: 2_520 }, (_, index) => `evt_${String(index).padStart(4, '0')}`);
      await Promise.all(ids.map((id, index) => archive.record(delivery(id, { at: now - 10_000 + index }))));
      expect(await archive.prune()).toBe(2_510);
      expect((await allPages(archive, {})).map((item) => item.eventId)).toEqual(ids.slice(-10).reverse());
      expect(await admin.hlen(`{${prefix}}:idx`)).toBe(10);
    });

    it('keeps at most maxBytes, deleting the oldest until under, and counts the bytes back to zero', async () => {
      const prefix = newPrefix('max-bytes');
      const archive = await open(3, { prefix, maxBytes: 10_000, pruneIntervalMs: false });
      const now = Date.now();
      const ids = Array.from({ length: 10 }, (_, index) => `evt_big_${index}`);
      for (const [index, id] of ids.entries()) {
        await archive.record(delivery(id, { at: now + index, body: new Uint8Array(2_000).fill(index) }));
      }
      const kept = Number(await admin.get(`{${prefix}}:bytes`));
      expect(kept).toBeGreaterThan(20_000);
      const removed = await archive.prune();
      expect(removed).toBeGreaterThan(5);
      expect(Number(await admin.get(`{${prefix}}:bytes`))).toBeLessThanOrEqual(10_000);
      expect((await allPages(archive, {})).map((item) => item.eventId)).toEqual(ids.slice(removed).reverse());

      const small = await open(3, { prefix, maxBytes: 1, pruneIntervalMs: false });
      expect(await small.prune()).toBe(10 - removed);
      expect(await admin.get(`{${prefix}}:bytes`)).toBe('0');
      // A count left over with nothing kept (say, keys deleted by hand) is reset, not chased forever.
      await admin.set(`{${prefix}}:bytes`, 5_000);
      expect(await small.prune()).toBe(0);
      expect(await admin.get(`{${prefix}}:bytes`)).toBe('0');
    });

    it('undoes an event whose keys expired before a prune: on a new entry, and in the prune itself', async () => {
      const prefix = newPrefix('expired');
      const archive = await open(1, { prefix, retentionMs: 200, pruneIntervalMs: false });
      const [again, never] = [newId(), newId()];
      await archive.record(delivery(again, { eventType: 'x.y' }));
      await archive.record(delivery(never, { eventType: 'x.y', result: 'failed' }));
      await until(async () => (await admin.exists(`{${prefix}}:e:${again}`)) === 0, 'the keys to expire');
      // A new delivery of an expired event starts it again: the old count is taken off first.
      await archive.record(delivery(again, { eventType: 'x.y', result: 'failed', at: Date.now() - 1_000 }));
      const index = await admin.hvals(`{${prefix}}:idx`);
      const sizes = index.map((entry) => Number(entry.split(' ')[0]));
      expect(Number(await admin.get(`{${prefix}}:bytes`))).toBe(sizes[0]! + sizes[1]!);
      expect(await archive.get(again)).toMatchObject({ deliveries: 1, outcome: 'failed' });
      expect(await admin.zscore(`{${prefix}}:outcome:processed`, again)).toBeNull();
      // The prune undoes the expired one by its index entry, the other (its index entry deleted by
      // hand, its keys still there) by its hash.
      await admin.hdel(`{${prefix}}:idx`, again);
      expect(await admin.exists(`{${prefix}}:e:${again}`)).toBe(1);
      expect(await archive.prune()).toBe(2);
      expect(await admin.zcard(`{${prefix}}:type:x.y`)).toBe(0);
      expect(await admin.zcard(`{${prefix}}:all`)).toBe(0);
    });

    it('prunes in the background once the archive writes, reports what fails to onError, and stops on close()', async () => {
      const prefix = newPrefix('background');
      const errors: Error[] = [];
      const archive = await open(0, {
        prefix,
        maxEvents: 2,
        pruneIntervalMs: 50,
        onError: (error) => errors.push(error),
      });
      const reader = await open(0, { prefix, maxEvents: 1, pruneIntervalMs: 50 });
      for (let index = 0; index < 5; index += 1) await archive.record(delivery(newId(), { at: Date.now() + index }));
      await until(async () => (await admin.zcard(`{${prefix}}:all`)) === 2, 'the background prune');
      // The reader never wrote: it never pruned down to its own maxEvents of 1.
      await sleep(200);
      expect(await admin.zcard(`{${prefix}}:all`)).toBe(2);
      expect(reader.writeTimeoutMs).toBe(2_000);

      await admin.del(`{${prefix}}:bytes`);
      await admin.hset(`{${prefix}}:bytes`, 'not', 'a counter');
      await until(() => errors.length > 0, 'onError to hear the failed prune');
      expect(errors[0]!.message).toMatch(/^pixhook: RedisArchive: prune\(inbox\) failed: .*WRONGTYPE/);
      await archive.close();
      const heard = errors.length;
      await sleep(300);
      expect(errors.length).toBe(heard);
      await admin.del(`{${prefix}}:bytes`);
    });

    it('keeps pruning when onError throws', async () => {
      const prefix = newPrefix('throwing-listener');
      let calls = 0;
      const archive = await open(0, {
        prefix,
        pruneIntervalMs: 30,
        onError: () => {
          calls += 1;
          throw new Error('listener bug');
        },
      });
      await archive.record(delivery(newId()));
      await admin.del(`{${prefix}}:all`);
      await admin.set(`{${prefix}}:all`, 'not a sorted set');
      await until(() => calls >= 2, 'onError twice');
      await archive.close();
    });
  });

  describe('replays', () => {
    it('hands each request to one of two archives attached to one prefix, skips ids not kept, and swallows a failing replay', async () => {
      const prefix = newPrefix('replays');
      const writer = await open(0, { prefix, replayPollMs: 20 });
      const ids = Array.from({ length: 45 }, newId);
      for (const id of ids) await writer.record(delivery(id));
      const a = await open(0, { prefix, replayPollMs: 15 });
      const b = await open(3, { prefix, replayPollMs: 15 });
      const taken: { id: string; by: string }[] = [];
      const replay = (by: string) => async (id: string) => {
        taken.push({ id, by });
        await sleep(1);
        if (id === ids[3]) throw new Error('the handler failed again');
        return 'done';
      };
      const detachA = a.attach(replay('a'));
      const detachB = b.attach(replay('b'));
      expect(await writer.requestReplay([...ids, 'evt_not_kept', newId()])).toBe(45);
      await until(() => taken.length >= 45, 'every request to be taken');
      await sleep(100);
      expect(taken.map((item) => item.id).sort()).toEqual([...ids].sort());
      expect(new Set(taken.map((item) => item.by)).size).toBeGreaterThanOrEqual(1);
      expect(await admin.llen(`{${prefix}}:replays`)).toBe(0);
      detachA();
      detachB();
      detachB();
      expect(await writer.requestReplay([])).toBe(0);
    });

    it('uses the most recently attached replay; detached, the one before; none: stops polling', async () => {
      const prefix = newPrefix('attach');
      const archive = await open(4, { prefix, replayPollMs: 10 });
      const id = newId();
      await archive.record(delivery(id));
      const calls: string[] = [];
      const detachFirst = archive.attach(async () => calls.push('first'));
      const detachSecond = archive.attach(async () => calls.push('second'));
      await archive.requestReplay([id]);
      await until(() => calls.length === 1, 'the replay');
      expect(calls).toEqual(['second']);
      detachSecond();
      await archive.requestReplay([id]);
      await until(() => calls.length === 2, 'the replay');
      expect(calls).toEqual(['second', 'first']);
      detachFirst();
      await archive.requestReplay([id]);
      await sleep(200);
      expect(calls).toHaveLength(2);
      expect(await admin.lrange(`{${prefix}}:replays`, 0, -1)).toEqual([id]);
    });

    it('puts back the requests of a batch it was detached in the middle of, for another process', async () => {
      const prefix = newPrefix('detach-mid');
      const archive = await open(0, { prefix, replayPollMs: 10 });
      const ids = Array.from({ length: 5 }, (_, index) => `evt_mid_${index}`);
      for (const id of ids) await archive.record(delivery(id));
      await archive.requestReplay(ids);
      const seen: string[] = [];
      let detach: () => void = () => {};
      detach = archive.attach(async (id) => {
        seen.push(id);
        if (seen.length === 2) detach();
      });
      await until(async () => (await admin.llen(`{${prefix}}:replays`)) === 3, 'the rest to be put back');
      expect(seen).toEqual(ids.slice(0, 2));
      expect(await admin.lrange(`{${prefix}}:replays`, 0, -1)).toEqual(ids.slice(2));
      const other = await open(1, { prefix, replayPollMs: 10 });
      other.attach(async (id) => {
        seen.push(id);
      });
      await until(() => seen.length === 5, 'another archive to take them');
      expect(seen).toEqual(ids);
    });

    it('runs one poll at a time when detached and attached again while a replay runs', async () => {
      const prefix = newPrefix('reattach');
      const archive = await open(0, { prefix, replayPollMs: 10 });
      const [first, second] = [newId(), newId()];
      for (const id of [first, second]) await archive.record(delivery(id));
      const calls: string[] = [];
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let detach: () => void = () => {};
      detach = archive.attach(async (id) => {
        calls.push(`slow:${id}`);
        await gate;
      });
      await archive.requestReplay([first]);
      await until(() => calls.length === 1, 'the slow replay to start');
      detach();
      archive.attach(async (id) => {
        calls.push(`next:${id}`);
      });
      // Polls come due while the slow replay still runs: none starts beside it.
      await archive.requestReplay([second]);
      await sleep(150);
      expect(calls).toEqual([`slow:${first}`]);
      release();
      await until(() => calls.length === 2, 'the next replay');
      await sleep(100);
      expect(calls).toEqual([`slow:${first}`, `next:${second}`]);
    });

    it('retries a poll that failed on the next tick, telling onError, and stops on close()', async () => {
      const prefix = newPrefix('poll-fails');
      const errors: Error[] = [];
      const archive = await open(2, { prefix, replayPollMs: 10, onError: (error) => errors.push(error) });
      const id = newId();
      await archive.record(delivery(id));
      await admin.set(`{${prefix}}:replays`, 'not a list');
      const replayed: string[] = [];
      archive.attach(async (eventId) => {
        replayed.push(eventId);
      });
      await until(() => errors.length >= 2, 'two failed polls');
      expect(errors[0]!.message).toMatch(/^pixhook: RedisArchive: poll\(replays\) failed: .*WRONGTYPE/);
      await admin.del(`{${prefix}}:replays`);
      await archive.requestReplay([id]);
      await until(() => replayed.length === 1, 'the replay after the failures');
      await archive.close();
      await archive.requestReplay([id]);
      await sleep(150);
      expect(replayed).toHaveLength(1);
      // Attached after close(): nothing polls.
      archive.attach(async (eventId) => {
        replayed.push(eventId);
      });
      await sleep(150);
      expect(replayed).toHaveLength(1);
    });
  });

  it('archives what new Webhooks({ archive }) answers, byte-exact, and runs a replay requested from another process', async () => {
    const prefix = newPrefix('webhooks');
    const secret = 'whsec_redis_archive_4f5e6d';
    const archive = await open(0, { prefix, replayPollMs: 20 });
    const runs: { id: string; replay: boolean }[] = [];
    const webhooks = new Webhooks({ secret, archive });
    webhooks.on('image.created', (event, context) => {
      runs.push({ id: event.id, replay: context.replay === true });
    });
    const event = createTestEvent('image.created', undefined, { id: newId() });
    const { body, headers } = createSignedRequest(event, { secret });
    const answer = await webhooks.handle({ method: 'POST', headers, body });
    expect(answer.status).toBe(200);
    const kept = await archive.get(event.id);
    expect(Buffer.from(kept!.body).toString('utf8')).toBe(body);
    expect(kept).toMatchObject({ outcome: 'processed', deliveries: 1, mode: 'inline', eventType: 'image.created' });

    // The CLI or the dashboard: another archive on the same prefix, another client.
    const reader = await open(3, { prefix });
    expect(await reader.requestReplay([event.id])).toBe(1);
    await until(() => runs.length === 2, 'the replay to run the handler');
    expect(runs).toEqual([
      { id: event.id, replay: false },
      { id: event.id, replay: true },
    ]);
    await until(async () => ((await reader.get(event.id))?.timeline.length ?? 0) === 2, 'the replay in the timeline');
    expect((await reader.get(event.id))?.timeline[1]).toMatchObject({ kind: 'replay', result: 'processed' });
  });

  it('answers Redis errors with the operation named, and loads its scripts again after SCRIPT FLUSH', async () => {
    const prefix = newPrefix('errors');
    const archive = await open(3, { prefix });
    const id = newId();
    await archive.record(delivery(id));
    await admin.script('FLUSH');
    await archive.record(step(id));
    expect((await archive.get(id))?.timeline).toHaveLength(2);
    await admin.del(`{${prefix}}:all`);
    await admin.set(`{${prefix}}:all`, 'wrong type');
    await expect(archive.record(delivery(newId()))).rejects.toThrow(
      /^pixhook: RedisArchive: record\(delivery\) failed: .*WRONGTYPE/,
    );
    await expect(archive.list()).rejects.toThrow(/^pixhook: RedisArchive: list\(inbox\) failed: .*WRONGTYPE/);
    const stored = await admin.get(`{${prefix}}:b:${id}`);
    await admin.set(`{${prefix}}:b:${id}`, 'not json {\nAAAA');
    await expect(archive.get(id)).rejects.toThrow(/^pixhook: RedisArchive: get\(event\): its headers is not JSON/);
    await admin.del(`{${prefix}}:b:${id}`);
    await expect(archive.get(id)).rejects.toThrow(/its headers is not JSON/);
    await admin.rpush(`{${prefix}}:t:${id}`, '<not json>');
    await admin.set(`{${prefix}}:b:${id}`, stored!);
    await expect(archive.get(id)).rejects.toThrow(/its timeline entry 2 is not JSON/);
  });

  for (const index of [0, 3]) {
    const name = CLIENTS[index]!.name;
    it(`rejects record() within writeTimeoutMs when Redis is frozen (SIGSTOP), and writes again once it runs (${name})`, async () => {
      const frozen = await startRedisServer();
      const connection = await CLIENTS[index]!.connect(frozen.port);
      try {
        const archive = new RedisArchive(connection.client, { writeTimeoutMs: 300, pruneIntervalMs: false });
        const id = newId();
        await archive.record(delivery(id));
        frozen.pause();
        const started = performance.now();
        await expect(archive.record(step(id))).rejects.toThrow(
          /^pixhook: RedisArchive: Redis did not answer record\(job\) within 300 ms; is it reachable\?/,
        );
        const waited = performance.now() - started;
        expect(waited).toBeGreaterThanOrEqual(290);
        expect(waited).toBeLessThan(2_000);
        await expect(archive.list()).rejects.toThrow(/did not answer list\(inbox\) within 300 ms/);
        frozen.resume();
        // The late writes land once Redis runs again; a new one is written as usual.
        await archive.record(step(id, { result: 'failed' }));
        expect((await archive.get(id))?.outcome).toBe('failed');
      } finally {
        frozen.resume();
        await connection.close();
        await frozen.close();
      }
    });
  }
});
