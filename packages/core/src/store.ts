/** What a store answers when asked to claim an event. */
export type ClaimResult = 'claimed' | 'in-flight' | 'completed';

/**
 * Where pixhook records which events were processed, so each runs once. `MemoryStore` (the default)
 * serves one process; `@pixhook/redis` serves several instances behind one URL.
 *
 * @example
 * const store: IdempotencyStore = {
 *   async claim(id) { … return 'claimed' },
 *   async complete(id) { … },
 *   async release(id) { … },
 * }
 */
export interface IdempotencyStore {
  /** Atomically claims `eventId`. `'claimed'`: the caller runs the handlers. */
  claim(eventId: string): Promise<ClaimResult>;
  /** All handlers succeeded: later deliveries of `eventId` answer 200 without running them. */
  complete(eventId: string): Promise<void>;
  /** A handler failed: the next delivery of `eventId` may claim it again. */
  release(eventId: string): Promise<void>;
}

/**
 * How long a completed event is remembered by default: 48 hours, longer than the service's whole
 * retry schedule (1 min + 5 min + 30 min + 2 h + 6 h + 24 h ≈ 32.6 h, plus the deadlines).
 */
export const DEFAULT_COMPLETED_TTL_MS = 48 * 60 * 60 * 1000;

/**
 * How long a claim holds by default while handlers run: 10 minutes. Past it, a retry may claim the
 * event again, so keep handlers well under it (the service gives up on an answer after 10 s anyway).
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
