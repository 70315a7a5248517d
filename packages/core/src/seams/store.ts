/** What a store answers when asked to claim an event. */
export type ClaimResult = 'claimed' | 'in-flight' | 'completed';

/**
 * What the ordering guard's mark says of an event (`IdempotencyStore.advance`): `current` (it is
 * the newest seen for its key, or that newest itself: it runs) or `stale` (a newer one was seen:
 * its guarded handlers are skipped).
 */
export type OrderingResult = 'current' | 'stale';

/**
 * The ordering guard's rule, which every store applies: event (`version`, `eventId`) is current
 * against the mark (`markVersion`, `markEventId`) when its version is greater, or equal with an
 * event id that is not smaller (compared as strings, by UTF-16 code units, as JavaScript's `<`
 * and Postgres' `COLLATE "C"` do). Equal ids are the same event, run again (a retry, a replay).
 */
export function isCurrent(version: number, eventId: string, markVersion: number, markEventId: string): boolean {
  return version > markVersion || (version === markVersion && eventId >= markEventId);
}

/**
 * Where pixhook records which events were processed, so each runs once. `MemoryStore` (the default)
 * serves one process; `@pixhook/redis` serves several instances behind one URL.
 *
 * Every call carries the `token` of one claim attempt (unique across processes), so that a run whose
 * claim expired cannot complete or release the claim of a later delivery. A store written for the
 * one-argument form (`claim(id)`, `complete(id)`, `release(id)`) keeps working: it ignores the token,
 * and then a handler that outlives the claim can free a later delivery's claim, as before.
 *
 * @example
 * const store: IdempotencyStore = {
 *   async claim(id, token) { … return 'claimed' },
 *   async complete(id, token) { … },
 *   async release(id, token) { … },
 * }
 */
export interface IdempotencyStore {
  /** Atomically claims `eventId` for `token`. `'claimed'`: the caller runs the handlers. */
  claim(eventId: string, token: string): Promise<ClaimResult>;
  /**
   * All handlers succeeded: later deliveries of `eventId` answer 200 without running them. Records
   * the completion when `token` still holds the claim or nobody does; rejects, changing nothing, when
   * another claim holds the event now (core reports it through `onError`; the answer stays 200).
   */
  complete(eventId: string, token: string): Promise<void>;
  /** A handler failed: drops the claim if `token` still holds it, so the next delivery may claim again. */
  release(eventId: string, token: string): Promise<void>;
  /**
   * Optional. Renews `token`'s claim for another in-flight period; resolves `false` when the claim is
   * no longer `token`'s. Core calls it every third of `inFlightTtlMs` from the start of each run
   * whose handlers went asynchronous, so a slow handler keeps its claim until it really ends (or
   * `maxClaimMs` passes).
   */
  extend?(eventId: string, token: string): Promise<boolean>;
  /** Optional. How long a claim holds, in ms; paces `extend`. */
  readonly inFlightTtlMs?: number;
  /**
   * Optional; needed by the ordering guard (`ordering` options). Atomically, for the mark kept under
   * `key` (an ordering key, scoped by tenant): when (`version`, `eventId`) is current against it
   * (`isCurrent`), or there is none, keeps it as the mark, for as long as completed events are
   * remembered, and answers `current`; else changes nothing and answers `stale`.
   */
  advance?(key: string, version: number, eventId: string): Promise<OrderingResult>;
  /**
   * Optional. A condition that weakens the guarantee without failing a claim (`MemoryStore`: ids
   * forgotten before their TTL because it was full), handed over once; core asks after each claim
   * and reports it through `onError` as `DUPLICATE_WINDOW_SHORTENED`. Rate-limit it in the store.
   */
  takeWarning?(): Error | undefined;
}

/**
 * How long a completed event is remembered by default: 48 hours, longer than the service's whole
 * retry schedule (1 min + 5 min + 30 min + 2 h + 6 h + 24 h ≈ 32.6 h, plus the deadlines).
 */
export const DEFAULT_COMPLETED_TTL_MS = 48 * 60 * 60 * 1000;

/**
 * How long a claim holds by default while handlers run: 10 minutes. Past it, a retry may claim the
 * event again, unless the store can `extend` claims (`MemoryStore` and `RedisStore` can): then core
 * renews the claim of a handler that is still running.
 */
export const DEFAULT_IN_FLIGHT_TTL_MS = 10 * 60 * 1000;

/** True when `value` has the three methods of an `IdempotencyStore`. */
export function isIdempotencyStore(value: unknown): value is IdempotencyStore {
  if (typeof value !== 'object' || value === null) return false;
  const store = value as Record<string, unknown>;
  return (
    typeof store.claim === 'function' && typeof store.complete === 'function' && typeof store.release === 'function'
  );
}
