import { describe, expect, it } from 'vitest';
import { type ArchivedDelivery, type ArchivedStep, checkInboxQuery, inboxCursor, MemoryArchive } from '../index.js';

function delivery(eventId: string, at: number, over: Partial<ArchivedDelivery> = {}): ArchivedDelivery {
  return {
    kind: 'delivery',
    eventId,
    eventType: 'image.created',
    created: 1_700_000_000,
    deliveryId: `dlv_${eventId}_${at}`,
    timestamp: 1_700_000_000,
    at,
    body: new TextEncoder().encode(`{"id":"${eventId}"}`),
    headers: { 'x-service-event': 'image.created' },
    secretIndex: 0,
    mode: 'inline',
    status: 200,
    result: 'processed',
    ms: 1,
    runs: [],
    ...over,
  };
}

function step(eventId: string, at: number, result: ArchivedStep['result']): ArchivedStep {
  return { kind: 'job', eventId, eventType: 'image.created', at, result, ms: 1, runs: [] };
}

describe('MemoryArchive', () => {
  it('pages newest first without gaps or repeats, ties broken by event id', async () => {
    const archive = new MemoryArchive();
    for (let i = 0; i < 25; i++) await archive.record(delivery(`evt_${String(i).padStart(2, '0')}`, 1000 + (i % 5)));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await archive.list({ limit: 7, cursor });
      seen.push(...page.items.map((item) => item.eventId));
      cursor = page.next;
    } while (cursor);
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    const full = (await archive.list({ limit: 500 })).items;
    expect(seen).toEqual(full.map((item) => item.eventId));
    expect(full[0]).toMatchObject({ lastAt: 1004, eventId: 'evt_24' });
    expect(full[1]).toMatchObject({ lastAt: 1004, eventId: 'evt_19' });
  });

  it('filters on type, outcome, time, event id and delivery id', async () => {
    const archive = new MemoryArchive();
    await archive.record(delivery('evt_a', 100));
    await archive.record(delivery('evt_b', 200, { eventType: 'image.deleted', result: 'failed', status: 500 }));
    await archive.record(delivery('evt_c', 300, { mode: 'queued', result: 'queued', status: 202 }));
    await archive.record(step('evt_c', 400, 'dead-letter'));
    const ids = async (query: Parameters<MemoryArchive['list']>[0]) =>
      (await archive.list(query)).items.map((item) => item.eventId);
    expect(await ids({ type: 'image.deleted' })).toEqual(['evt_b']);
    expect(await ids({ outcome: 'dead-letter' })).toEqual(['evt_c']);
    expect(await ids({ since: 200, until: 400 })).toEqual(['evt_b']);
    expect(await ids({ eventId: 'evt_a' })).toEqual(['evt_a']);
    expect(await ids({ deliveryId: 'dlv_evt_b_200' })).toEqual(['evt_b']);
    const c = await archive.get('evt_c');
    expect(c).toMatchObject({ outcome: 'dead-letter', deliveries: 1, firstAt: 300, lastAt: 400, mode: 'queued' });
    expect(await archive.get('evt_none')).toBeUndefined();
  });

  it('keeps a step for an event it never saw delivered', async () => {
    const archive = new MemoryArchive();
    await archive.record(step('evt_late', 5, 'processed'));
    expect(await archive.get('evt_late')).toMatchObject({ deliveries: 0, bytes: 0, outcome: 'processed' });
  });

  it('forgets past the retention and past maxEvents, least recently seen first', async () => {
    let now = 10_000;
    const archive = new MemoryArchive({ maxEvents: 3, retentionMs: 1000, now: () => now });
    for (const [id, at] of [
      ['evt_1', 8000],
      ['evt_2', 9500],
      ['evt_3', 9600],
      ['evt_4', 9700],
    ] as const) {
      await archive.record(delivery(id, at));
    }
    expect(archive.size).toBe(3);
    expect(await archive.get('evt_1')).toBeUndefined();
    now = 10_550;
    expect(await archive.prune()).toBe(1);
    expect((await archive.list()).items.map((item) => item.eventId)).toEqual(['evt_4', 'evt_3']);
  });

  it('refuses bad options and bad queries with a pixhook: TypeError', async () => {
    expect(() => new MemoryArchive({ maxEvents: 0 })).toThrow('maxEvents must be a positive whole number');
    expect(() => new MemoryArchive({ retentionMs: -1 })).toThrow('retentionMs must be');
    expect(() => new MemoryArchive({ now: 5 as never })).toThrow('now must be a function');
    expect(() => new MemoryArchive({ maxEvent: 5 } as never)).toThrow('maxEvent');
    const archive = new MemoryArchive();
    await expect(archive.list({ outcome: 'lost' as never })).rejects.toThrow('outcome must be one of');
    await expect(archive.list({ limit: 501 })).rejects.toThrow('limit must be a whole number from 1 to 500');
    await expect(archive.list({ cursor: 'not json!' })).rejects.toThrow('cursor is not one this inbox gave');
    await expect(archive.list({ cursor: inboxCursor(1, 'x').slice(2) })).rejects.toThrow('cursor is not one');
    await expect(archive.list({ cursor: btoa('[1,2]') })).rejects.toThrow('cursor is not one');
    await expect(archive.list({ type: '' })).rejects.toThrow('type must be a non-empty string');
    await expect(archive.list({ since: -1 })).rejects.toThrow('since must be a time');
    await expect(archive.list(null as never)).rejects.toThrow('the query must be an object');
    await expect(archive.requestReplay('evt_1' as never)).rejects.toThrow('needs an array');
  });

  it('reads its own cursors back, with any characters in the event id', () => {
    const id = 'evt_ünïcödé/+=\u202e';
    expect(checkInboxQuery({ cursor: inboxCursor(1_800_000_000_123, id) }).after).toEqual({
      lastAt: 1_800_000_000_123,
      eventId: id,
    });
  });

  it('hands replay requests to the attached runner until it detaches or closes', async () => {
    const archive = new MemoryArchive();
    await archive.record(delivery('evt_r', 1));
    const asked: string[] = [];
    const detach = archive.attach(async (id) => void asked.push(id));
    expect(await archive.requestReplay(['evt_r', 'evt_missing'])).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toEqual(['evt_r']);
    detach();
    expect(await archive.requestReplay(['evt_r'])).toBe(1);
    archive.attach(async () => {
      throw new Error('a runner that fails is not the caller’s problem');
    });
    await archive.close();
    expect(await archive.requestReplay(['evt_r'])).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toEqual(['evt_r']);
  });
});

describe('MemoryArchive: a job that ends before the 202 is archived', () => {
  it('keeps the delivery’s body and orders the timeline on when things happened', async () => {
    const archive = new MemoryArchive();
    await archive.record(step('evt_fast', 20, 'processed'));
    await archive.record(delivery('evt_fast', 10, { mode: 'queued', result: 'queued', status: 202 }));
    const kept = await archive.get('evt_fast');
    expect(kept).toMatchObject({ outcome: 'processed', deliveries: 1, firstAt: 10, lastAt: 20, mode: 'queued' });
    expect(new TextDecoder().decode(kept?.body)).toBe('{"id":"evt_fast"}');
    expect(kept?.timeline.map((entry) => entry.kind)).toEqual(['delivery', 'job']);
  });
});
