import type { AnyHandler, ErrorContext, HandlerContext } from './context.js';
import { cancelDeadline, setDeadline } from './deadlines.js';
import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';
import { isThenable, type Maybe } from './maybe.js';
import type { IdempotencyStore } from './store.js';
import {
  beginEvent,
  type ClaimOutcome,
  claimEvent,
  completeClaim,
  type HeldClaim,
  keepClaim,
  releaseClaim,
} from './store-protocol.js';
import { commitFailed, commitReadBack, type EventTransactions, rollbackFailed } from './transactions.js';

/** What running a verified event once came to, for the pipeline to answer. */
export type Outcome = { kind: 'done'; duplicate: boolean } | { kind: 'rejected'; error: WebhookVerificationError };

/** What `runOnce` needs from its host: the store, the deadline, and where to report. */
export interface RunOnceHost {
  readonly options: {
    readonly store: IdempotencyStore | false;
    /** Transactional mode: each event's handlers run in its transaction; `store` is not used. */
    readonly transactions: EventTransactions | undefined;
    readonly handlerTimeoutMs: number | undefined;
  };
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

const DONE: Outcome = { kind: 'done', duplicate: false };
const DUPLICATE: Outcome = { kind: 'done', duplicate: true };

/** One run of one event: its handlers and their context. */
interface Run {
  readonly host: RunOnceHost;
  readonly handlers: readonly AnyHandler[];
  readonly event: AnyEvent;
  /** Transactional mode: `context.transaction` is set once the transaction is open. */
  readonly context: HandlerContext;
  /** Where its failures are reported: `onError`, with the delivery's context. */
  readonly report: (error: WebhookVerificationError) => void;
}

/**
 * Runs a verified event's handlers at most once at a time across deliveries: claim it in the store,
 * run the handlers under the handler deadline, then complete or release the claim.
 * Never throws or rejects: every failure becomes an outcome, and every failure (those after the
 * answer too) is reported to `onError` here. Synchronous as long as everything it meets is: a
 * `MemoryStore` (or none) and handlers that return no promise give the outcome at once, without a
 * timer, a promise or a microtask hop; it switches to promises at the first thing that is async.
 */
export function runOnce(
  host: RunOnceHost,
  handlers: readonly AnyHandler[],
  event: AnyEvent,
  context: HandlerContext,
): Maybe<Outcome> {
  const report = (error: WebhookVerificationError) => {
    // Made only when something is reported: most deliveries never need it.
    const { request, deliveryId, timestamp } = context;
    host.reportError(error, { request, deliveryId, timestamp, event } satisfies ErrorContext);
  };
  const run: Run = { host, handlers, event, context, report };
  const { store, transactions } = host.options;
  const claimed = transactions ? beginEvent(transactions, event.id) : claimEvent(store, event.id, report);
  return claimed instanceof Promise ? claimed.then((outcome) => afterClaim(run, outcome)) : afterClaim(run, claimed);
}

function rejected(run: Run, error: WebhookVerificationError): Outcome {
  run.report(error);
  return { kind: 'rejected', error };
}

function afterClaim(given: Run, claimed: ClaimOutcome): Maybe<Outcome> {
  if (claimed.kind === 'completed') return DUPLICATE;
  if (claimed.kind === 'rejected') return rejected(given, claimed.error);
  const claim = claimed;
  const run = claim.open ? { ...given, context: { ...given.context, transaction: claim.open.transaction } } : given;
  const { handlers, event, context } = run;
  for (let i = 0; i < handlers.length; i++) {
    let result: unknown;
    try {
      result = (handlers[i] as AnyHandler)(event, context);
      // Reading `then` may throw too (a hostile getter): that is this handler failing.
      if (isThenable(result)) return underDeadline(run, claim, finishAsync(run, claim, result, i + 1));
    } catch (cause) {
      return failed(run, claim, cause);
    }
  }
  return succeeded(run, claim);
}

function succeeded(run: Run, claim: HeldClaim): Maybe<Outcome> {
  // Transactional mode: the commit keeps the handlers' writes and the record together, or neither.
  const open = claim.open;
  if (open) {
    return new Promise<unknown>((resolve) => resolve(open.commit())).then(
      (answer) => {
        const lost = commitReadBack(claim.id, answer);
        if (lost) run.report(lost);
        return DONE;
      },
      (cause: unknown) => rejected(run, commitFailed(claim.id, cause)),
    );
  }
  const recorded = completeClaim(claim, run.report);
  return recorded instanceof Promise ? recorded.then(() => DONE) : DONE;
}

function failed(run: Run, claim: HeldClaim, cause: unknown): Maybe<Outcome> {
  const error = handlerFailed(run.event, cause);
  const open = claim.open;
  if (open) {
    return new Promise<void>((resolve) => resolve(open.rollback())).then(
      () => rejected(run, error),
      (failure: unknown) => {
        run.report(rollbackFailed(claim.id, failure));
        return rejected(run, error);
      },
    );
  }
  const released = releaseClaim(claim, run.report);
  return released instanceof Promise ? released.then(() => rejected(run, error)) : rejected(run, error);
}

/** Waits for the handler that returned `pending`, runs the rest from `next` one after another, then ends the claim. */
async function finishAsync(run: Run, claim: HeldClaim, pending: PromiseLike<unknown>, next: number): Promise<Outcome> {
  const { handlers, event, context } = run;
  try {
    await pending;
    for (let i = next; i < handlers.length; i++) await (handlers[i] as AnyHandler)(event, context);
  } catch (cause) {
    return failed(run, claim, cause);
  }
  return succeeded(run, claim);
}

/**
 * The outcome of `settled`, or a `HANDLER_TIMEOUT` once `handlerTimeoutMs` passes first: then the
 * handlers keep running and the claim is renewed until they end. The deadline counts from the first
 * handler that went asynchronous (a synchronous stretch cannot be interrupted anyway).
 */
function underDeadline(run: Run, claim: HeldClaim, settled: Promise<Outcome>): Promise<Outcome> {
  const timeoutMs = run.host.options.handlerTimeoutMs;
  if (timeoutMs === undefined) return settled;
  return new Promise((resolve) => {
    let stopKeeping: (() => void) | undefined;
    const deadline = setDeadline(timeoutMs, () => {
      stopKeeping = keepClaim(claim, run.report);
      resolve(
        rejected(
          run,
          new WebhookVerificationError(
            'HANDLER_TIMEOUT',
            `The handlers for ${run.event.type} did not finish within handlerTimeoutMs (${timeoutMs} ms); they keep running and hold the event's claim until they end, and the service will retry.`,
          ),
        ),
      );
    });
    void settled.then((outcome) => {
      cancelDeadline(deadline);
      stopKeeping?.();
      resolve(outcome);
    });
  });
}

function handlerFailed(event: AnyEvent, cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'HANDLER_FAILED',
    // The answer must not repeat the handler's message: it may hold internal details.
    `A handler for ${event.type} failed; the event was not marked processed, so the service's retry will run it again.`,
    { cause },
  );
}
