import { describe, expect, it } from 'vitest';
import { DEFAULT_COMPLETED_TTL_MS, DEFAULT_IN_FLIGHT_TTL_MS, MemoryStore, Webhooks } from '../index.js';
import { createSignedRequest, createTestEvent } from '../testing.js';

/** A clock the test moves by hand. */
function clock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** Claims and completes `ids` in order. */
async function completeAll(store: MemoryStore, ids: string[]): Promise<void> {
  for (const id of ids) {
    expect(await store.claim(id)).toBe('claimed');
    await store.complete(id);
  }
}

describe('MemoryStore', () => {
  it('claim → in-flight → completed', async () => {
    const store = new MemoryStore();
    expect(await store.claim('evt_1')).toBe('claimed');
    expect(await store.claim('evt_1')).toBe('in-flight');
    await store.complete('evt_1');
    expect(await store.claim('evt_1')).toBe('completed');
    expect(await store.claim('evt_1')).toBe('completed');
  });

  it('release lets the next delivery claim again', async () => {
    const store = new MemoryStore();
    expect(await store.claim('evt_1')).toBe('claimed');
    await store.release('evt_1');
    expect(await store.claim('evt_1')).toBe('claimed');
  });

  it('keeps events apart', async () => {
    const store = new MemoryStore();
    expect(await store.claim('evt_a')).toBe('claimed');
    expect(await store.claim('evt_b')).toBe('claimed');
    await store.complete('evt_a');
    expect(await store.claim('evt_a')).toBe('completed');
    expect(await store.claim('evt_b')).toBe('in-flight');
    expect(store.size).toBe(2);
  });

  it('releasing or completing an unknown id does not throw', async () => {
    const store = new MemoryStore();
    await expect(store.release('evt_none')).resolves.toBeUndefined();
    await expect(store.complete('evt_none')).resolves.toBeUndefined();
  });

  it('an in-flight claim expires after inFlightTtlMs', async () => {
    const c = clock();
    const store = new MemoryStore({ inFlightTtlMs: 1000, now: c.now });
    expect(await store.claim('evt_1')).toBe('claimed');
    c.advance(999);
    expect(await store.claim('evt_1')).toBe('in-flight');
    c.advance(1);
    expect(await store.claim('evt_1')).toBe('claimed');
  });

  it('a completed event is forgotten after completedTtlMs, counted from completion', async () => {
    const c = clock();
    const store = new MemoryStore({ completedTtlMs: 5000, inFlightTtlMs: 1000, now: c.now });
    expect(await store.claim('evt_1')).toBe('claimed');
    c.advance(900);
    await store.complete('evt_1');
    c.advance(4999);
    expect(await store.claim('evt_1')).toBe('completed');
    c.advance(1);
    expect(await store.claim('evt_1')).toBe('claimed');
  });

  it('defaults cover the retry schedule: 48 h for completed events, 10 min for claims', async () => {
    expect(DEFAULT_COMPLETED_TTL_MS).toBe(48 * 3600 * 1000);
    expect(DEFAULT_IN_FLIGHT_TTL_MS).toBe(10 * 60 * 1000);
    const c = clock();
    const store = new MemoryStore({ now: c.now });
    await completeAll(store, ['evt_done']);
    expect(await store.claim('evt_busy')).toBe('claimed');
    c.advance(DEFAULT_IN_FLIGHT_TTL_MS - 1);
    expect(await store.claim('evt_busy')).toBe('in-flight');
    c.advance(1);
    expect(await store.claim('evt_busy')).toBe('claimed');
    c.advance(DEFAULT_COMPLETED_TTL_MS - DEFAULT_IN_FLIGHT_TTL_MS - 1);
    expect(await store.claim('evt_done')).toBe('completed');
    c.advance(1);
    expect(await store.claim('evt_done')).toBe('claimed');
  });

  it('when full, a completion forgets the oldest completed event, one at a time', async () => {
    const store = new MemoryStore({ maxEntries: 10 });
    const ids = Array.from({ length: 10 }, (_, i) => `evt_${i}`);
    await completeAll(store, ids);
    expect(store.size).toBe(10);
    // A claim forgets nothing: claims are bounded apart.
    expect(await store.claim('evt_new')).toBe('claimed');
    expect(store.size).toBe(11);
    expect(await store.claim('evt_0')).toBe('completed');
    await store.complete('evt_new');
    expect(store.size).toBe(10);
    // The newest completed events are still known…
    expect(await store.claim('evt_1')).toBe('completed');
    expect(await store.claim('evt_new')).toBe('completed');
    // …the oldest is not.
    expect(await store.claim('evt_0')).toBe('claimed');
  });

  it('remembers the last maxEntries completed events: a duplicate of any of them is answered as one (issue 24)', async () => {
    // Before, a full store forgot 10 % of its entries at once: the window was about 0.9 × maxEntries.
    const store = new MemoryStore({ maxEntries: 100 });
    const ids = Array.from({ length: 245 }, (_, i) => `evt_window_${i}`);
    await completeAll(store, ids);
    const answers = [];
    for (const id of ids.slice(-100)) answers.push(await store.claim(id, 'probe'));
    expect(answers.filter((answer) => answer !== 'completed')).toEqual([]);
    // The 101st newest is the first one forgotten.
    expect(await store.claim(ids[144] as string, 'probe')).toBe('claimed');
  });

  it('"oldest" means completed longest ago, not claimed first', async () => {
    const store = new MemoryStore({ maxEntries: 2 });
    expect(await store.claim('evt_a')).toBe('claimed');
    expect(await store.claim('evt_b')).toBe('claimed');
    await store.complete('evt_b');
    await store.complete('evt_a');
    expect(await store.claim('evt_c')).toBe('claimed');
    await store.complete('evt_c');
    expect(await store.claim('evt_a')).toBe('completed');
    expect(await store.claim('evt_b')).toBe('claimed');
  });

  it('when full, drops expired entries before completed ones', async () => {
    const c = clock();
    const store = new MemoryStore({ maxEntries: 3, inFlightTtlMs: 1000, now: c.now });
    await completeAll(store, ['evt_done']);
    expect(await store.claim('evt_stale1')).toBe('claimed');
    expect(await store.claim('evt_stale2')).toBe('claimed');
    c.advance(1000);
    expect(await store.claim('evt_new')).toBe('claimed');
    expect(await store.claim('evt_done')).toBe('completed');
  });

  it('a store full of in-flight claims refuses a new claim with an error and drops none', async () => {
    const store = new MemoryStore({ maxEntries: 3 });
    for (const id of ['evt_1', 'evt_2', 'evt_3']) expect(await store.claim(id)).toBe('claimed');
    await expect(store.claim('evt_4')).rejects.toThrow(/full.*maxEntries/);
    for (const id of ['evt_1', 'evt_2', 'evt_3']) expect(await store.claim(id)).toBe('in-flight');
    // Once one finishes there is room again.
    await store.release('evt_2');
    expect(await store.claim('evt_4')).toBe('claimed');
  });

  it('claims and completed events are bounded apart: running claims never push out completed ones', async () => {
    const store = new MemoryStore({ maxEntries: 4 });
    await completeAll(store, ['evt_done1', 'evt_done2', 'evt_done3', 'evt_done4']);
    for (const id of ['evt_busy1', 'evt_busy2', 'evt_busy3', 'evt_busy4'])
      expect(await store.claim(id)).toBe('claimed');
    await expect(store.claim('evt_busy5')).rejects.toThrow(/full/);
    for (const id of ['evt_busy1', 'evt_busy2', 'evt_busy3', 'evt_busy4'])
      expect(await store.claim(id)).toBe('in-flight');
    for (const id of ['evt_done1', 'evt_done2', 'evt_done3', 'evt_done4'])
      expect(await store.claim(id)).toBe('completed');
    expect(store.size).toBe(8);
  });

  it('stays within maxEntries completed events (plus the claims running) under a long stream of events', async () => {
    const store = new MemoryStore({ maxEntries: 50 });
    for (let i = 0; i < 1000; i++) {
      expect(await store.claim(`evt_${i}`)).toBe('claimed');
      expect(store.size).toBeLessThanOrEqual(51);
      await store.complete(`evt_${i}`);
      expect(store.size).toBeLessThanOrEqual(50);
    }
    expect(await store.claim('evt_999')).toBe('completed');
  });

  it.each([
    ['completedTtlMs', 0],
    ['completedTtlMs', -1],
    ['completedTtlMs', 1.5],
    ['completedTtlMs', Number.NaN],
    ['completedTtlMs', Number.POSITIVE_INFINITY],
    ['completedTtlMs', '1000'],
    ['inFlightTtlMs', 0],
    ['inFlightTtlMs', -5],
    ['inFlightTtlMs', null],
    ['maxEntries', 0],
    ['maxEntries', 2.5],
    ['maxEntries', '10'],
  ])('rejects %s = %j when built', (name, value) => {
    expect(() => new MemoryStore({ [name]: value } as never)).toThrow(new RegExp(`${name}.*positive whole number`));
  });

  it('a misspelled option throws with the closest name; a wrong type is named', () => {
    expect(() => new MemoryStore({ maxEntry: 5 } as never)).toThrow(
      /no option "maxEntry"\. Did you mean "maxEntries"\?/,
    );
    expect(() => new MemoryStore({ completedTTLMs: 5 } as never)).toThrow(/Did you mean "completedTtlMs"\?/);
    expect(() => new MemoryStore({ maxEntries: '10' } as never)).toThrow(/got the string "10"/);
    expect(() => new MemoryStore(null as never)).toThrow(/options object/);
  });

  it('accepts explicit undefined options as defaults', async () => {
    const store = new MemoryStore({ completedTtlMs: undefined, inFlightTtlMs: undefined, maxEntries: undefined });
    expect(await store.claim('evt_1')).toBe('claimed');
  });
});

describe('MemoryStore: forgetting ids before completedTtlMs', () => {
  it('says so once a minute, with how many and how young', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ maxEntries: 10, now: () => now });
    for (let i = 0; i < 10; i++) {
      expect(await store.claim(`evt_${i}`, 't')).toBe('claimed');
      await store.complete(`evt_${i}`, 't');
      now += 60_000;
    }
    expect(store.takeWarning()).toBeUndefined();
    // Full: the next completion forgets the oldest completed event, long before its 48 h.
    expect(await store.claim('evt_new', 't')).toBe('claimed');
    expect(store.takeWarning()).toBeUndefined();
    await store.complete('evt_new', 't');
    const warning = store.takeWarning();
    expect(warning?.message).toMatch(/forgot 1 completed event\(s\) before completedTtlMs because maxEntries \(10\)/);
    expect(warning?.message).toMatch(/the youngest was 0\.2 h old/);
    expect(await store.claim('evt_0', 't')).toBe('claimed'); // forgotten: it would run again
    // Rate-limited: more forgetting within the minute is counted, not said.
    for (let i = 0; i < 5; i++) {
      await store.claim(`evt_more_${i}`, 't');
      await store.complete(`evt_more_${i}`, 't');
    }
    expect(store.takeWarning()).toBeUndefined();
    now += 60_000;
    expect(store.takeWarning()?.message).toMatch(/forgot \d+ completed/);
    expect(store.takeWarning()).toBeUndefined();
  });

  it('core tells onError (DUPLICATE_WINDOW_SHORTENED) and the answers stay 200', async () => {
    const webhooks = new Webhooks({ secret: 'whsec_window', store: new MemoryStore({ maxEntries: 3 }) });
    const codes: string[] = [];
    webhooks.onError((error) => void codes.push(error.code));
    webhooks.on('image.created', () => {});
    for (let i = 0; i < 6; i++) {
      const res = await webhooks.handle(
        createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_window' }),
      );
      expect(res.status).toBe(200);
    }
    expect(codes).toEqual(['DUPLICATE_WINDOW_SHORTENED']);
  });

  it('expired entries dropped to make room are not reported', async () => {
    let now = 0;
    const store = new MemoryStore({ maxEntries: 3, completedTtlMs: 1000, now: () => now });
    for (const id of ['evt_a', 'evt_b', 'evt_c']) {
      await store.claim(id, 't');
      await store.complete(id, 't');
    }
    now += 1001;
    expect(await store.claim('evt_d', 't')).toBe('claimed');
    expect(store.takeWarning()).toBeUndefined();
  });

  it('the default remembers 100,000 events: 48 h at 2,000 events an hour', () => {
    // 2,000 events/h × 48 h = 96,000 ≤ 100,000.
    expect(new MemoryStore().inFlightTtlMs).toBe(DEFAULT_IN_FLIGHT_TTL_MS);
    const store = new MemoryStore({ now: () => 0 });
    return (async () => {
      for (let i = 0; i < 99_999; i++) {
        await store.claim(`evt_${i}`, 't');
        await store.complete(`evt_${i}`, 't');
      }
      expect(await store.claim('evt_last', 't')).toBe('claimed');
      expect(store.takeWarning()).toBeUndefined();
      expect(await store.claim('evt_0', 't')).toBe('completed');
    })();
  });
});
