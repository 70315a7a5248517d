import {
  type ClaimResult,
  DEFAULT_COMPLETED_TTL_MS,
  DEFAULT_IN_FLIGHT_TTL_MS,
  type IdempotencyStore,
  isCurrent,
  type OrderingResult,
} from '../seams/store.js';
import { assertKnownOptions, describeType } from '../util/option-checks.js';
import { CompletedEvents, hashOf } from './completed-events.js';
import { InFlightClaims } from './in-flight-claims.js';

/** Options of `MemoryStore`. */
export interface MemoryStoreOptions {
  /**
   * How long a completed event is remembered, in ms. Covers the service's retry schedule.
   * @default 172_800_000 (48 hours)
   */
  completedTtlMs?: number;
  /**
   * How long a claim holds unless renewed, in ms; then the event may be claimed again. Core renews
   * it every third of this from the start of each run, so it holds until the run ends (or
   * `maxClaimMs` passes): only a run whose process died lets it lapse.
   * @default 600_000 (10 minutes)
   */
  inFlightTtlMs?: number;
  /**
   * Most completed events remembered at once: the store remembers the last `maxEntries` completed
   * events (or those of the last `completedTtlMs`, whichever is fewer). The default keeps every
   * event for the whole 48 h at up to 2,000 events an hour (about 25 MB). Once that many are
   * remembered, each completion forgets the oldest one (a retry of it would run again, and `onError`
   * is told, at most once a minute). Claims in flight are bounded by the same number, apart: a
   * store with that many running claims refuses new ones (503), it never drops a running claim.
   * @default 100_000
   */
  maxEntries?: number;
  /** Clock in ms, for tests. @default Date.now */
  now?: () => number;
}

/** Keys of the synchronous methods behind `claim`, `complete` and `release`, for core's fast path. */
export const claimNow = Symbol('pixhook.MemoryStore.claimNow');
export const completeNow = Symbol('pixhook.MemoryStore.completeNow');
export const releaseNow = Symbol('pixhook.MemoryStore.releaseNow');
export const advanceNow = Symbol('pixhook.MemoryStore.advanceNow');

/** The ordering guard's mark for one key. */
interface Mark {
  version: number;
  eventId: string;
  expiresAt: number;
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
  // The claims in flight (few: those whose handlers run now) in a small table (in-flight-claims.ts),
  // and the completed events (up to maxEntries) in a ring with a compact index (completed-events.ts),
  // in the order they completed. Completing moves an id from the first to the second: per delivery,
  // the large structure sees one lookup and one insertion, and no object is allocated for either.
  // (Claim tokens are core's numbers, or the caller's strings.)
  readonly #inFlight = new InFlightClaims();
  /** The ordering guard's marks, oldest update first (at most maxEntries). */
  readonly #marks = new Map<string, Mark>();
  readonly #completed: CompletedEvents;
  /** The clock's reading when the store was made; times are kept relative to it. */
  readonly #base: number;
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
    this.#completed = new CompletedEvents(this.#maxEntries);
    this.#now = options.now ?? Date.now;
    this.#base = this.#now();
  }

  /** Number of events remembered now (expired ones may linger until the next claim). */
  get size(): number {
    return this.#inFlight.size + this.#completed.size;
  }

  /** The clock, in ms since the store was made. */
  #time(): number {
    return this.#now() - this.#base;
  }

  async claim(eventId: string, token?: string): Promise<ClaimResult> {
    return this[claimNow](eventId, token);
  }

  async complete(eventId: string, token?: string): Promise<void> {
    this[completeNow](eventId, token);
  }

  async release(eventId: string, token?: string): Promise<void> {
    this[releaseNow](eventId, token);
  }

  // The work of claim, complete and release, synchronously: core calls these directly (see
  // `syncMemoryStore`), which saves a promise and a microtask hop per call on every delivery.

  [claimNow](eventId: string, token?: string | number): ClaimResult {
    const now = this.#time();
    const hash = hashOf(eventId);
    // An expired completion stays in the ring until it is the oldest; it no longer counts.
    if (this.#completed.expiresAfter(eventId, now, hash) !== undefined) return 'completed';
    const held = this.#inFlight.find(eventId, hash);
    if (held >= 0) {
      if (this.#inFlight.expiresAt(held) > now) return 'in-flight';
      this.#inFlight.remove(held);
    }
    // Claims have a bound of their own: making room for one never forgets a completed event.
    if (this.#inFlight.size >= this.#maxEntries) this.#inFlight.dropExpired(now);
    if (this.#inFlight.size >= this.#maxEntries) {
      throw new Error(
        `pixhook: MemoryStore is full: ${this.#maxEntries} events are being processed at once (maxEntries); raise maxEntries.`,
      );
    }
    this.#inFlight.add(eventId, hash, token, now + this.inFlightTtlMs);
    return 'claimed';
  }

  [completeNow](eventId: string, token?: string | number): void {
    const now = this.#time();
    const hash = hashOf(eventId);
    const held = this.#inFlight.find(eventId, hash);
    if (held >= 0 && this.#inFlight.expiresAt(held) > now && this.#inFlight.token(held) !== token) {
      throw new Error(
        `pixhook: MemoryStore: event ${eventId} was not marked completed: its claim expired while the handlers ran (inFlightTtlMs is ${this.inFlightTtlMs} ms) and another delivery holds it now.`,
      );
    }
    if (held >= 0) {
      this.#inFlight.remove(held);
    } else if (this.#completed.expiresAfter(eventId, now, hash) !== undefined) {
      return;
    }
    // Full: the oldest completed event makes room (one, so the last maxEntries stay remembered).
    if (this.#completed.size >= this.#maxEntries) this.#forgetOldest(now);
    this.#completed.add(eventId, now + this.#completedTtlMs, hash);
  }

  [releaseNow](eventId: string, token?: string | number): void {
    const held = this.#inFlight.find(eventId, hashOf(eventId));
    // Only the caller's own claim: a run whose claim expired must not free a later delivery's.
    if (held >= 0 && this.#inFlight.token(held) === token) this.#inFlight.remove(held);
  }

  async advance(key: string, version: number, eventId: string): Promise<OrderingResult> {
    return this[advanceNow](key, version, eventId);
  }

  /** The ordering guard's compare-and-set (`IdempotencyStore.advance`), synchronously. */
  [advanceNow](key: string, version: number, eventId: string): OrderingResult {
    const now = this.#time();
    const mark = this.#marks.get(key);
    if (mark !== undefined && mark.expiresAt > now && !isCurrent(version, eventId, mark.version, mark.eventId)) {
      return 'stale';
    }
    // Moved to the end: the Map's order is the order of the last updates, oldest first.
    this.#marks.delete(key);
    if (this.#marks.size >= this.#maxEntries) {
      const oldest = this.#marks.keys().next();
      if (!oldest.done) this.#marks.delete(oldest.value);
    }
    this.#marks.set(key, { version, eventId, expiresAt: now + this.#completedTtlMs });
    return 'current';
  }

  async extend(eventId: string, token?: string): Promise<boolean> {
    const now = this.#time();
    const claims = this.#inFlight;
    const held = claims.find(eventId, hashOf(eventId));
    if (held < 0 || claims.token(held) !== token || claims.expiresAt(held) <= now) return false;
    claims.renew(held, now + this.inFlightTtlMs);
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

  /** Drops the oldest completed event before its time, counting it for the warning. */
  #forgetOldest(now: number): void {
    const expiresAt = this.#completed.oldestExpiresAt();
    if (expiresAt === undefined) return;
    this.#completed.dropOldest();
    if (expiresAt <= now) return;
    this.#forgotten++;
    this.#forgottenAge = Math.min(this.#forgottenAge, now - (expiresAt - this.#completedTtlMs));
  }
}

const proto = MemoryStore.prototype;

/**
 * `store` when it is a `MemoryStore` of this copy of core whose `claim`, `complete` and `release` are
 * its own (not overridden in a subclass, not replaced on the instance, by a test spy say), so that
 * core may call the synchronous methods behind them; otherwise undefined, and core awaits the store.
 */
export function syncMemoryStore(store: unknown): MemoryStore | undefined {
  return store instanceof MemoryStore &&
    store.claim === proto.claim &&
    store.complete === proto.complete &&
    store.release === proto.release
    ? store
    : undefined;
}
