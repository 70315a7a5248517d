import {
  type ClaimResult,
  DEFAULT_COMPLETED_TTL_MS,
  DEFAULT_IN_FLIGHT_TTL_MS,
  type IdempotencyStore,
} from './store.js';

/** Options of `MemoryStore`. */
export interface MemoryStoreOptions {
  /**
   * How long a completed event is remembered, in ms. Covers the service's retry schedule.
   * @default 172_800_000 (48 hours)
   */
  completedTtlMs?: number;
  /**
   * How long a claim holds while handlers run, in ms; then the event may be claimed again.
   * @default 600_000 (10 minutes)
   */
  inFlightTtlMs?: number;
  /**
   * Most events remembered at once. When full, the oldest completed events are forgotten first;
   * a store full of in-flight events refuses new claims (503), it never drops a running claim.
   * @default 10_000
   */
  maxEntries?: number;
  /** Clock in ms, for tests. @default Date.now */
  now?: () => number;
}

interface Entry {
  state: 'in-flight' | 'completed';
  expiresAt: number;
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`MemoryStore: ${name} must be a positive whole number, got ${String(value)}.`);
  }
  return value;
}

/**
 * The default idempotency store: one process's memory, bounded by TTLs and an entry count.
 * For several app instances behind one URL, use `RedisStore` from `@pixhook/redis`.
 *
 * @example
 * new Webhooks({ secret, store: new MemoryStore({ maxEntries: 50_000 }) })
 */
export class MemoryStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #completedTtlMs: number;
  readonly #inFlightTtlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: MemoryStoreOptions = {}) {
    this.#completedTtlMs = positiveInteger(options.completedTtlMs, DEFAULT_COMPLETED_TTL_MS, 'completedTtlMs');
    this.#inFlightTtlMs = positiveInteger(options.inFlightTtlMs, DEFAULT_IN_FLIGHT_TTL_MS, 'inFlightTtlMs');
    this.#maxEntries = positiveInteger(options.maxEntries, 10_000, 'maxEntries');
    this.#now = options.now ?? Date.now;
  }

  /** Number of events remembered now (expired ones may linger until the next claim). */
  get size(): number {
    return this.#entries.size;
  }

  async claim(eventId: string): Promise<ClaimResult> {
    const now = this.#now();
    const entry = this.#entries.get(eventId);
    if (entry && entry.expiresAt > now) return entry.state;
    if (entry) this.#entries.delete(eventId);
    if (this.#entries.size >= this.#maxEntries) this.#evict(now);
    if (this.#entries.size >= this.#maxEntries) {
      throw new Error(`MemoryStore is full: ${this.#maxEntries} events are being processed at once; raise maxEntries.`);
    }
    this.#entries.set(eventId, { state: 'in-flight', expiresAt: now + this.#inFlightTtlMs });
    return 'claimed';
  }

  async complete(eventId: string): Promise<void> {
    // Re-insert so that Map order stays oldest-first for eviction.
    this.#entries.delete(eventId);
    this.#entries.set(eventId, { state: 'completed', expiresAt: this.#now() + this.#completedTtlMs });
  }

  async release(eventId: string): Promise<void> {
    this.#entries.delete(eventId);
  }

  /**
   * Drops expired entries, then the oldest completed ones, down to 90% of `maxEntries`, so that a
   * full store scans once per many claims rather than on every one.
   */
  #evict(now: number): void {
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt <= now) this.#entries.delete(id);
    }
    const target = Math.floor(this.#maxEntries * 0.9);
    if (this.#entries.size <= target) return;
    for (const [id, entry] of this.#entries) {
      if (entry.state === 'completed') {
        this.#entries.delete(id);
        if (this.#entries.size <= target) return;
      }
    }
  }
}
