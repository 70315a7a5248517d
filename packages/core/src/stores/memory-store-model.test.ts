// MemoryStore against a model: the plain Map-based store it replaced (issue 9 gave it a compact
// index for speed). Random sequences of claims, completions, releases and clock steps must get the
// same answers from both, and leave the same number of entries, including when the store is full
// and forgets its oldest completed events, when ids expire, and when the index grows.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ClaimResult, MemoryStore } from '../index.js';

interface ModelEntry {
  state: 'in-flight' | 'completed';
  expiresAt: number;
  token: string | undefined;
}

/** The specification, written the obvious way: one Map in completion order. */
class ModelStore {
  readonly entries = new Map<string, ModelEntry>();
  forgotten = 0;
  constructor(
    readonly max: number,
    readonly inFlightTtl: number,
    readonly completedTtl: number,
    readonly now: () => number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  claim(id: string, token: string): ClaimResult | 'full' {
    const now = this.now();
    const entry = this.entries.get(id);
    if (entry && entry.expiresAt > now) return entry.state;
    if (entry) this.entries.delete(id);
    // Claims are bounded apart from completed events: expired claims make room, nothing else.
    if (this.claims() >= this.max) this.evict(now);
    if (this.claims() >= this.max) return 'full';
    this.entries.set(id, { state: 'in-flight', expiresAt: now + this.inFlightTtl, token });
    return 'claimed';
  }

  complete(id: string, token: string): 'ok' | 'refused' {
    const now = this.now();
    const entry = this.entries.get(id);
    if (entry && entry.expiresAt > now) {
      if (entry.state === 'completed') return 'ok';
      if (entry.token !== token) return 'refused';
    }
    this.entries.delete(id);
    // Completed events alone never exceed max: the oldest is forgotten first (one).
    const completed = [...this.entries].filter(([, e]) => e.state === 'completed');
    if (completed.length >= this.max) {
      const [oldest, e] = completed[0] as [string, ModelEntry];
      this.entries.delete(oldest);
      if (e.expiresAt > now) this.forgotten++;
    }
    this.entries.set(id, { state: 'completed', expiresAt: now + this.completedTtl, token: undefined });
    return 'ok';
  }

  release(id: string, token: string): void {
    const entry = this.entries.get(id);
    if (entry?.state === 'in-flight' && entry.token === token) this.entries.delete(id);
  }

  claims(): number {
    return [...this.entries.values()].filter((e) => e.state === 'in-flight').length;
  }

  evict(now: number): void {
    for (const [id, entry] of this.entries) {
      if (entry.state === 'in-flight' && entry.expiresAt <= now) this.entries.delete(id);
    }
  }
}

type Op =
  | { op: 'claim'; id: number; token: number }
  | { op: 'complete'; id: number; token: number }
  | { op: 'release'; id: number; token: number }
  | { op: 'tick'; ms: number };

const opArb = (ids: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('claim' as const), id: fc.nat(ids - 1), token: fc.nat(3) }) },
    {
      weight: 4,
      arbitrary: fc.record({ op: fc.constant('complete' as const), id: fc.nat(ids - 1), token: fc.nat(3) }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('release' as const), id: fc.nat(ids - 1), token: fc.nat(3) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 40 }) }) },
  );

/** Runs `ops` on both stores; answers the first step where they differ, or undefined. */
async function compare(ops: Op[], max: number, inFlightTtlMs: number, completedTtlMs: number) {
  let now = 1_000;
  const store = new MemoryStore({ maxEntries: max, inFlightTtlMs, completedTtlMs, now: () => now });
  const model = new ModelStore(max, inFlightTtlMs, completedTtlMs, () => now);
  for (const [step, o] of ops.entries()) {
    if (o.op === 'tick') {
      now += o.ms;
      continue;
    }
    const id = `evt_${o.id}`;
    const token = `tok_${o.token}`;
    let got: string;
    let want: string;
    if (o.op === 'claim') {
      want = model.claim(id, token);
      got = await store.claim(id, token).catch(() => 'full');
    } else if (o.op === 'complete') {
      want = model.complete(id, token);
      got = await store.complete(id, token).then(
        () => 'ok',
        () => 'refused',
      );
    } else {
      model.release(id, token);
      await store.release(id, token);
      want = got = 'ok';
    }
    if (got !== want || store.size !== model.size) {
      return { step, op: o, got, want, size: store.size, modelSize: model.size };
    }
  }
  return undefined;
}

describe('MemoryStore behaves as the Map-based model', () => {
  it('on random sequences over a few ids, small stores and short TTLs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb(12), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 5, max: 60 }),
        fc.integer({ min: 5, max: 200 }),
        async (ops, max, inFlight, completed) => {
          expect(await compare(ops, max, inFlight, completed)).toBeUndefined();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('while its index grows past its first size and wraps its ring (thousands of ids)', async () => {
    // A seeded sequence, long enough to grow the ring from 1,024 to 3,000 ids and wrap it.
    let seed = 42;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % n;
    };
    const ops: Op[] = [];
    for (let i = 0; i < 20_000; i++) {
      const r = rand(10);
      const id = rand(5_000);
      if (r < 5) ops.push({ op: 'claim', id, token: 0 });
      else if (r < 9) ops.push({ op: 'complete', id, token: 0 });
      else ops.push({ op: 'tick', ms: 1 });
    }
    expect(await compare(ops, 3_000, 50, 1_500)).toBeUndefined();
  });
});
