// The ordering guard: a handler registered with an ordering (or under a `Webhooks`-wide one) runs
// only for an event at least as new as the newest seen for its key, so a late retry of an old event
// never rolls the app's state back. The newest seen per key is a mark in the store (inline, and in
// queue workers) or in the event's transaction (transactional mode), moved by one atomic
// compare-and-set per event and key, when the event is processed.
import { WebhookVerificationError } from '../protocol/errors.js';
import { eventKey } from '../protocol/event-key.js';
import type { AnyEvent } from '../protocol/events.js';
import { type AnyHandler, handlerOrdering, type Ordering } from '../seams/context.js';
import type { IdempotencyStore, OrderingResult } from '../seams/store.js';
import type { OpenEvent } from '../seams/transactions.js';
import { advanceNow, MemoryStore, syncMemoryStore } from '../stores/memory-store.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import { describeType } from '../util/option-checks.js';

/** Longest ordering key kept, in characters: a longer one is not guarded. */
const MAX_KEY_CHARACTERS = 512;

/** Throws a TypeError unless `value` is an ordering (`{ key, version? }`) or, where allowed, `false`. */
export function checkOrdering(value: unknown, where: string): asserts value is Ordering | false | undefined {
  if (value === undefined || value === false) return;
  const ordering = value as Partial<Ordering> | null;
  if (
    typeof value !== 'object' ||
    ordering === null ||
    typeof ordering.key !== 'function' ||
    (ordering.version !== undefined && typeof ordering.version !== 'function')
  ) {
    throw new TypeError(
      `pixhook: ${where} must be { key: (event) => string, version?: (event) => number }, or false; got ${describeType(value)}.`,
    );
  }
  for (const name of Object.keys(ordering)) {
    if (name !== 'key' && name !== 'version') {
      throw new TypeError(
        `pixhook: ${where} has an unknown field ${JSON.stringify(name.slice(0, 40))}; it takes key and version.`,
      );
    }
  }
}

/** The ordering that guards `handler`: its own, else the `Webhooks`-wide one; undefined for none. */
export function orderingOf(handler: AnyHandler, everywhere: Ordering | undefined): Ordering | undefined {
  const own = handlerOrdering(handler);
  return own === false ? undefined : (own ?? everywhere);
}

/** Where the marks are kept: the event's open transaction, else the store. */
export interface MarkKeeper {
  readonly store: IdempotencyStore | false | undefined;
  readonly open: OpenEvent<unknown> | undefined;
}

/** The decisions of one run, by mark key and version: one compare-and-set per event and key. */
export type Decisions = Map<string, Maybe<OrderingResult>>;

function marksUnavailable(message: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError('STORE_UNAVAILABLE', message, cause === undefined ? undefined : { cause });
}

/** `value` quoted and capped, for a message: an ordering key comes from the event. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/**
 * Whether a handler guarded by `ordering` runs for `event` (received for `tenant`): true at once
 * for an event without a key or a version; else after the mark's compare-and-set (at once with a
 * `MemoryStore`). A stale event is reported (`STALE_EVENT`, naming `handlerName`) and answers
 * false. Throws (or rejects with) `STORE_UNAVAILABLE` when the marks cannot be read or kept; an
 * ordering function that throws fails the handler.
 */
export function shouldRun(
  ordering: Ordering,
  event: AnyEvent,
  tenant: string | undefined,
  keeper: MarkKeeper,
  decisions: Decisions,
  report: (error: WebhookVerificationError) => void,
  handlerName: string,
): Maybe<boolean> {
  const key = ordering.key(event as never);
  if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_CHARACTERS) return true;
  const version = ordering.version === undefined ? event.created : ordering.version(event as never);
  if (typeof version !== 'number' || !Number.isFinite(version)) return true;
  const markKey = eventKey(key, tenant);
  const decisionKey = `${version}\u0000${markKey}`;
  let decided = decisions.get(decisionKey);
  if (decided === undefined) {
    decided = advance(keeper, markKey, version, event.id);
    decisions.set(decisionKey, decided);
  }
  const judge = (result: OrderingResult): boolean => {
    if (result === 'current') return true;
    report(
      new WebhookVerificationError(
        'STALE_EVENT',
        `Event ${event.id} (${event.type}, version ${version}) is older than the newest event seen for ordering key ${quoted(key)}, so handler ${handlerName === '' ? 'without a name' : quoted(handlerName)} was skipped and the event acknowledged: the newer state stays.`,
      ),
    );
    return false;
  };
  return isThenable(decided) ? Promise.resolve(decided).then(judge) : judge(decided);
}

/** The mark's compare-and-set where it is kept. */
function advance(keeper: MarkKeeper, key: string, version: number, eventId: string): Maybe<OrderingResult> {
  const { store, open } = keeper;
  let pending: unknown;
  try {
    if (open !== undefined) {
      if (typeof open.advance !== 'function') {
        throw marksUnavailable(
          "This EventTransactions keeps no ordering marks (its open events have no advance()); the ordering guard needs one (@pixhook/postgres' PostgresTransactions has it).",
        );
      }
      pending = open.advance(key, version, eventId);
    } else {
      if (!store || typeof store.advance !== 'function') {
        throw marksUnavailable(
          'The ordering guard needs a store that keeps ordering marks (MemoryStore, RedisStore, PostgresStore: advance()); this Webhooks has none.',
        );
      }
      const memory = syncMemoryStore(store);
      pending =
        memory && store.advance === MemoryStore.prototype.advance
          ? memory[advanceNow](key, version, eventId)
          : store.advance(key, version, eventId);
    }
  } catch (cause) {
    if (cause instanceof WebhookVerificationError) throw cause;
    throw failedMark(cause);
  }
  if (!isThenable(pending)) return checkedResult(pending);
  return Promise.resolve(pending).then(checkedResult, (cause: unknown) => {
    throw failedMark(cause);
  });
}

function failedMark(cause: unknown): WebhookVerificationError {
  return marksUnavailable(
    "The ordering guard's mark could not be read or kept, so the event was not processed; the service will retry it.",
    cause,
  );
}

function checkedResult(result: unknown): OrderingResult {
  if (result === 'current' || result === 'stale') return result;
  throw failedMark(new TypeError(`pixhook: advance() answered ${JSON.stringify(result)}, not current/stale`));
}
