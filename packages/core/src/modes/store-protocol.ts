import { WebhookVerificationError } from '../protocol/errors.js';
import { endStep, type TransactionMessage, transactionChannel } from '../seams/diagnostics.js';
import { type ClaimResult, DEFAULT_IN_FLIGHT_TTL_MS, type IdempotencyStore } from '../seams/store.js';
import { beginFailed, checkBegun, type EventTransactions, type OpenEvent } from '../seams/transactions.js';
import { claimNow, completeNow, type MemoryStore, releaseNow, syncMemoryStore } from '../stores/memory-store.js';
import { cancelDeadline, type Deadline, setDeadline } from '../util/deadlines.js';
import { isThenable, type Maybe } from '../util/maybe.js';

/**
 * How core drives an `IdempotencyStore`: every call it makes (claim, complete, release, extend),
 * with the claim token, and every failure message those calls can lead to. Nothing here rejects:
 * a failure that changes the answer is returned, one that comes after it is reported.
 */

/** Where failures that do not change the answer go (`onError`, with the delivery's context). */
export type Report = (error: WebhookVerificationError) => void;

/**
 * A claim held on one event for one run, as plain data: `completeClaim`, `releaseClaim` and
 * `keepClaim` end or keep it. No closures per delivery: this runs for every request.
 */
export interface HeldClaim {
  readonly kind: 'claimed';
  /** The store, or undefined when there is none (every event is claimed, nothing to record). */
  readonly store: IdempotencyStore | undefined;
  /** The same store when core may call its synchronous methods (a `MemoryStore` of this copy). */
  readonly memory: MemoryStore | undefined;
  readonly id: string;
  readonly token: string | number;
  /** Transactional mode: the event's open transaction, which commits or rolls back instead of a store. */
  readonly open?: OpenEvent<unknown>;
}

/** What claiming an event came to: run the handlers, acknowledge a duplicate, or answer an error. */
export type ClaimOutcome =
  | HeldClaim
  | { readonly kind: 'completed' }
  | { readonly kind: 'rejected'; readonly error: WebhookVerificationError };

const NO_STORE: HeldClaim = { kind: 'claimed', store: undefined, memory: undefined, id: '', token: 0 };
const COMPLETED: ClaimOutcome = { kind: 'completed' };
const REPLAY = Object.freeze({ replay: true });

// Claim tokens: unique across processes (a random prefix) and cheap per request (a counter). A
// MemoryStore lives in this process only: its tokens are the counter alone, a number (no string).
let tokenPrefix: string | undefined;
let tokenCount = 0;
function nextToken(): string {
  tokenPrefix ??= `${globalThis.crypto.randomUUID()}:`;
  return tokenPrefix + (++tokenCount).toString(36);
}
let memoryTokens = 0;

function storeError(message: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError('STORE_UNAVAILABLE', message, { cause });
}

/**
 * Claims `eventId` in `store` for one run (with `store === false`, every event is claimed). A
 * store that fails or answers something else is `STORE_UNAVAILABLE`; an event another delivery
 * still runs is `IN_FLIGHT`. A warning the store hands over (`takeWarning`) is reported. Answers at
 * once for a `MemoryStore` (and without a store), with a promise for a store that is asynchronous.
 */
export function claimEvent(store: IdempotencyStore | false, eventId: string, report: Report): Maybe<ClaimOutcome> {
  if (!store) return NO_STORE;
  const memory = syncMemoryStore(store);
  if (memory) {
    const token = ++memoryTokens;
    let result: ClaimResult;
    try {
      result = memory[claimNow](eventId, token);
    } catch (cause) {
      return unavailable(cause);
    }
    return claimOutcome(store, memory, eventId, token, result, report);
  }
  const token = nextToken();
  let pending: unknown;
  try {
    pending = store.claim(eventId, token);
  } catch (cause) {
    return unavailable(cause);
  }
  if (!isThenable(pending)) return checkedOutcome(store, eventId, token, pending, report);
  return Promise.resolve(pending).then(
    (result) => checkedOutcome(store, eventId, token, result, report),
    (cause: unknown) => unavailable(cause),
  );
}

/**
 * Transactional mode: opens the event's transaction with `transactions.begin`. A failure, or an
 * answer that is none of the three, is `STORE_UNAVAILABLE`; an event another transaction holds is
 * `IN_FLIGHT`. With `replay`, asks to open it even for an event processed before (a replay from the
 * archive). Always a promise: a database is never synchronous. Traced on `pixhook:transaction`
 * when someone subscribes, from BEGIN to COMMIT or ROLLBACK.
 */
export function beginEvent(
  transactions: EventTransactions,
  eventId: string,
  eventType = '',
  replay = false,
): Promise<ClaimOutcome> {
  const begun = new Promise<unknown>((resolve) =>
    resolve(replay ? transactions.begin(eventId, REPLAY) : transactions.begin(eventId)),
  )
    .then((answer): ClaimOutcome => {
      const begun = checkBegun(answer);
      if (begun.state === 'completed') return COMPLETED;
      if (begun.state === 'in-flight') return inFlight();
      return { kind: 'claimed', store: undefined, memory: undefined, id: eventId, token: 0, open: begun };
    })
    .catch((cause: unknown): ClaimOutcome => ({ kind: 'rejected', error: beginFailed(cause) }));
  return transactionChannel.hasSubscribers ? tracedBegin(begun, eventId, eventType) : begun;
}

/** The transaction's trace: started now, ended when it never opened, or when it commits or rolls back. */
function tracedBegin(begun: Promise<ClaimOutcome>, eventId: string, eventType: string): Promise<ClaimOutcome> {
  const message: TransactionMessage = { eventId, eventType, result: undefined };
  const ended = () => endStep(transactionChannel, message);
  const failed = (cause: unknown) => {
    message.error = cause;
    ended();
  };
  transactionChannel.start.publish(message);
  transactionChannel.end.publish(message);
  return begun.then((outcome): ClaimOutcome => {
    if (outcome.kind === 'completed') {
      message.result = 'completed';
      ended();
      return outcome;
    }
    if (outcome.kind === 'rejected') {
      message.result = outcome.error.code === 'IN_FLIGHT' ? 'busy' : 'begin-failed';
      if (message.result === 'busy') ended();
      else failed(outcome.error.cause ?? outcome.error);
      return outcome;
    }
    const open = outcome.open as OpenEvent<unknown>;
    const traced: { -readonly [K in keyof OpenEvent<unknown>]: OpenEvent<unknown>[K] } = {
      state: open.state,
      transaction: open.transaction,
      commit: () =>
        new Promise<Awaited<ReturnType<OpenEvent<unknown>['commit']>>>((resolve) => resolve(open.commit())).then(
          (answer) => {
            message.result = 'committed';
            ended();
            return answer;
          },
          (cause: unknown) => {
            message.result = 'commit-failed';
            failed(cause);
            throw cause;
          },
        ),
      rollback: () =>
        new Promise<void>((resolve) => resolve(open.rollback())).then(
          () => {
            message.result = 'rolled-back';
            ended();
          },
          (cause: unknown) => {
            message.result = 'rolled-back';
            failed(cause);
            throw cause;
          },
        ),
    };
    if (typeof open.advance === 'function') traced.advance = open.advance.bind(open);
    return { ...outcome, open: traced };
  });
}

function inFlight(): ClaimOutcome {
  return {
    kind: 'rejected',
    error: new WebhookVerificationError(
      'IN_FLIGHT',
      'This event is still being processed by an earlier delivery; it was not run again.',
    ),
  };
}

function unavailable(cause: unknown): ClaimOutcome {
  return {
    kind: 'rejected',
    error: storeError(
      'The idempotency store is unavailable, so the event was not processed; the service will retry it.',
      cause,
    ),
  };
}

/** The outcome of what a store's `claim` answered, which may be anything: only the three answers count. */
function checkedOutcome(
  store: IdempotencyStore,
  eventId: string,
  token: string,
  result: unknown,
  report: Report,
): ClaimOutcome {
  if (result !== 'claimed' && result !== 'in-flight' && result !== 'completed') {
    return unavailable(
      new TypeError(`pixhook: store.claim() answered ${JSON.stringify(result)}, not claimed/in-flight/completed`),
    );
  }
  return claimOutcome(store, undefined, eventId, token, result, report);
}

function claimOutcome(
  store: IdempotencyStore,
  memory: MemoryStore | undefined,
  id: string,
  token: string | number,
  result: ClaimResult,
  report: Report,
): ClaimOutcome {
  if (typeof store.takeWarning === 'function') {
    let warning: Error | undefined;
    try {
      warning = store.takeWarning();
    } catch (cause) {
      // The store already granted the claim: run the handlers, and say that the store misbehaved.
      report(storeError("The store's takeWarning() failed; the claim it granted stands.", cause));
    }
    if (warning) {
      report(new WebhookVerificationError('DUPLICATE_WINDOW_SHORTENED', warning.message, { cause: warning }));
    }
  }
  if (result === 'completed') return COMPLETED;
  if (result === 'in-flight') return inFlight();
  return { kind: 'claimed', store, memory, id, token };
}

const completeFailed = (id: string) =>
  `Handlers for event ${id} succeeded but the store could not record it; a redelivery may run them again.`;
const releaseFailed = (id: string) =>
  `The store could not release event ${id} after a handler failed; retries may answer 409 until the store takes the release or the claim expires.`;

/** The two ways a claim ends: the MemoryStore method core calls directly, and the failure's message. */
const ENDINGS = {
  complete: { now: completeNow, failed: completeFailed },
  release: { now: releaseNow, failed: releaseFailed },
} as const;

/**
 * Ends a claim with the store's `complete` or `release` (a MemoryStore's at once). Never throws or
 * rejects: a failure is reported; undefined when done at once.
 */
function endClaim(claim: HeldClaim, report: Report, ending: keyof typeof ENDINGS): Maybe<void> {
  const { store, memory, id, token } = claim;
  if (!store) return;
  const { now, failed } = ENDINGS[ending];
  let pending: unknown;
  try {
    pending = memory ? memory[now](id, token) : store[ending](id, token as string);
  } catch (cause) {
    report(storeError(failed(id), cause));
    return;
  }
  if (!isThenable(pending)) return;
  return Promise.resolve(pending).then(
    () => {},
    (cause: unknown) => report(storeError(failed(id), cause)),
  );
}

/**
 * All handlers succeeded: record the event as processed. A failure is reported and the answer stays
 * 200 (answering an error would only make the service send it again).
 */
export function completeClaim(claim: HeldClaim, report: Report): Maybe<void> {
  const memory = claim.memory;
  // A MemoryStore's completion, called directly: the path of nearly every delivery.
  if (memory !== undefined) {
    try {
      memory[completeNow](claim.id, claim.token);
    } catch (cause) {
      report(storeError(completeFailed(claim.id), cause));
    }
    return;
  }
  return endClaim(claim, report, 'complete');
}

/** A handler failed: drop the claim, so the service's retry may run the event again. */
export function releaseClaim(claim: HeldClaim, report: Report): Maybe<void> {
  return endClaim(claim, report, 'release');
}

/**
 * A run's handlers went asynchronous: keep renewing the claim until the returned stop is called, so
 * that it cannot expire under a running handler whatever `inFlightTtlMs` is. Idempotent stop.
 */
export function keepClaim(claim: HeldClaim, report: Report): () => void {
  return claim.store ? renewClaim(claim.store, claim.id, claim.token, report) : () => {};
}

/**
 * Renews the claim every third of the store's `inFlightTtlMs`, from now, so that no retry runs the
 * event beside the run; returns the function that stops. Only stores with `extend` can. The
 * renewals ride core's shared deadline timers (util/deadlines.ts): a run that ends before the first one
 * costs a link added to a list and removed, not a timer.
 */
function renewClaim(store: IdempotencyStore, id: string, token: string | number, report: Report): () => void {
  const extend = store.extend;
  if (typeof extend !== 'function') return () => {};
  const ttl = store.inFlightTtlMs;
  const every = Math.max(1, Math.floor((typeof ttl === 'number' && ttl > 0 ? ttl : DEFAULT_IN_FLIGHT_TTL_MS) / 3));
  let reported = false;
  let stopped = false;
  let next: Deadline | undefined;
  const reportOnce = (message: string, cause?: unknown) => {
    if (reported) return;
    reported = true;
    report(storeError(message, cause));
  };
  const renew = () => {
    // The next renewal is due a third of the TTL after this one is sent, however long it takes.
    next = setDeadline(every, renew);
    Promise.resolve()
      .then(() => extend.call(store, id, token as string))
      .then(
        (kept) => {
          if (kept !== false || stopped) return;
          stop();
          reportOnce(
            `The claim on event ${id} was lost while its handlers ran (it expired before a renewal reached the store); a retry may run the event beside them. A longer inFlightTtlMs rides out longer store outages.`,
          );
        },
        // The store may be back by the next renewal: keep trying, and say it once.
        (cause: unknown) => {
          if (stopped) return;
          reportOnce(`The claim on event ${id} could not be renewed while its handlers ran; retrying.`, cause);
        },
      );
  };
  const stop = () => {
    stopped = true;
    if (next !== undefined) cancelDeadline(next);
    next = undefined;
  };
  next = setDeadline(every, renew);
  return stop;
}
