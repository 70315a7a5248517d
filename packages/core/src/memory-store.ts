import { assertKnownOptions, describeType } from './option-checks.js';
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
   * How long a claim holds while handlers run, in ms; then the event may be claimed again. Core
   * renews the claim of a handler still running past `handlerTimeoutMs`, so it holds until the run ends.
   * @default 600_000 (10 minutes)
   */
  inFlightTtlMs?: number;
  /**
   * Most events remembered at once. The default keeps every event for the whole 48 h at up to
   * 2,000 events an hour (about 25 MB). When full, the oldest completed events are forgotten first
   * (a retry of one of them would run again, and `onError` is told, at most once a minute); a store
   * full of in-flight events refuses new claims (503), it never drops a running claim.
   * @default 100_000
   */
  maxEntries?: number;
  /** Clock in ms, for tests. @default Date.now */
  now?: () => number;
}

interface Entry {
  state: 'in-flight' | 'completed';
  expiresAt: number;
  /** The claim's token while in flight. */
  token: string | undefined;
}

/** How often, at most, the store says it forgot events early. */
const WARN_EVERY_MS = 60_000;

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`pixhook: MemoryStore: ${name} must be a positive whole number, got ${describeType(value)}.`);
  }
  return value;
}

/**
 * The default idempotency store: one process's memory, bounded by TTLs and an entry count.
 * For several app instances behind one URL, use `RedisStore` from `@pixhook/redis`.
 *
 * @example
 * new Webhooks({ secret, store: new MemoryStore({ maxEntries: 500_000 }) })
 */
export class MemoryStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #completedTtlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** Completed events forgotten before completedTtlMs since the last warning. */
  #forgotten = 0;
  /** Age, in ms, of the youngest of them when it was forgotten. */
  #forgottenAge = Number.POSITIVE_INFINITY;
  #lastWarning = Number.NEGATIVE_INFINITY;
  /**
   * How long a claim holds while handlers run, in ms.
   * @example new MemoryStore().inFlightTtlMs // 600_000
   */
  readonly inFlightTtlMs: number;

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('pixhook: MemoryStore: new MemoryStore(options) takes an options object.');
    }
    assertKnownOptions(
      options,
      ['completedTtlMs', 'inFlightTtlMs', 'maxEntries', 'now'],
      'pixhook: MemoryStore: new MemoryStore(options)',
    );
    this.#completedTtlMs = positiveInteger(options.completedTtlMs, DEFAULT_COMPLETED_TTL_MS, 'completedTtlMs');
    this.inFlightTtlMs = positiveInteger(options.inFlightTtlMs, DEFAULT_IN_FLIGHT_TTL_MS, 'inFlightTtlMs');
    this.#maxEntries = positiveInteger(options.maxEntries, 100_000, 'maxEntries');
    this.#now = options.now ?? Date.now;
  }

  /** Number of events remembered now (expired ones may linger until the next claim). */
  get size(): number {
    return this.#entries.size;
  }

  async claim(eventId: string, token?: string): Promise<ClaimResult> {
    const now = this.#now();
    const entry = this.#entries.get(eventId);
    if (entry && entry.expiresAt > now) return entry.state;
    if (entry) this.#entries.delete(eventId);
    if (this.#entries.size >= this.#maxEntries) this.#evict(now);
    if (this.#entries.size >= this.#maxEntries) {
      throw new Error(
        `pixhook: MemoryStore is full: ${this.#maxEntries} events are being processed at once; raise maxEntries.`,
      );
    }
    this.#entries.set(eventId, { state: 'in-flight', expiresAt: now + this.inFlightTtlMs, token });
    return 'claimed';
  }

  async complete(eventId: string, token?: string): Promise<void> {
    const now = this.#now();
    const entry = this.#entries.get(eventId);
    if (entry && entry.expiresAt > now) {
      if (entry.state === 'completed') return;
      if (entry.token !== token) {
        throw new Error(
          `pixhook: MemoryStore: event ${eventId} was not marked completed: its claim expired while the handlers ran (inFlightTtlMs is ${this.inFlightTtlMs} ms) and another delivery holds it now.`,
        );
      }
    }
    // Re-insert so that Map order stays oldest-first for eviction.
    this.#entries.delete(eventId);
    this.#entries.set(eventId, { state: 'completed', expiresAt: now + this.#completedTtlMs, token: undefined });
  }

  async release(eventId: string, token?: string): Promise<void> {
    const entry = this.#entries.get(eventId);
    // Only the caller's own claim: a run whose claim expired must not free a later delivery's.
    if (entry?.state === 'in-flight' && entry.token === token) this.#entries.delete(eventId);
  }

  async extend(eventId: string, token?: string): Promise<boolean> {
    const now = this.#now();
    const entry = this.#entries.get(eventId);
    if (entry?.state !== 'in-flight' || entry.token !== token || entry.expiresAt <= now) return false;
    entry.expiresAt = now + this.inFlightTtlMs;
    return true;
  }

  /**
   * Says, at most once a minute, that completed events were forgotten before `completedTtlMs`
   * because the store was full; core asks after each claim and tells `onError`.
   */
  takeWarning(): Error | undefined {
    if (this.#forgotten === 0) return undefined;
    const now = this.#now();
    if (now - this.#lastWarning < WARN_EVERY_MS) return undefined;
    const hours = (this.#forgottenAge / 3_600_000).toFixed(1);
    const warning = new Error(
      `MemoryStore: forgot ${this.#forgotten} completed event(s) before completedTtlMs because maxEntries (${this.#maxEntries}) was reached; the youngest was ${hours} h old. A retry of one of them would run its handlers again: raise maxEntries, or use a shared store such as RedisStore.`,
    );
    this.#forgotten = 0;
    this.#forgottenAge = Number.POSITIVE_INFINITY;
    this.#lastWarning = now;
    return warning;
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
        this.#forgotten++;
        this.#forgottenAge = Math.min(this.#forgottenAge, now - (entry.expiresAt - this.#completedTtlMs));
        if (this.#entries.size <= target) return;
      }
    }
  }
}
