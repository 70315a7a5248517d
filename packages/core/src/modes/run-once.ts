import { WebhookVerificationError } from '../protocol/errors.js';
import { eventKey, handlerKey } from '../protocol/event-key.js';
import type { AnyEvent } from '../protocol/events.js';
import type { WebhookArchive } from '../seams/archive.js';
import {
  type AnyHandler,
  type ErrorContext,
  type HandlerContext,
  handlerId,
  handlerMeta,
  type Ordering,
} from '../seams/context.js';
import { callHandler, type DeliveryMessage, traceSkipped } from '../seams/diagnostics.js';
import { isSchemaMismatch } from '../seams/schema.js';
import type { IdempotencyStore } from '../seams/store.js';
import { commitFailed, commitReadBack, type EventTransactions, rollbackFailed } from '../seams/transactions.js';
import { cancelDeadline, setDeadline } from '../util/deadlines.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import { type DeliveryDraft, deliveryEntry, timedCall, writeEntry } from './archiving.js';
import { type Decisions, type MarkKeeper, shouldRun } from './ordering.js';
import { DONE, DUPLICATE, type Outcome } from './outcome.js';
import {
  beginEvent,
  type ClaimOutcome,
  claimEvent,
  completeClaim,
  type HeldClaim,
  keepClaim,
  releaseClaim,
} from './store-protocol.js';

/** What `runOnce` needs from its host: the store, the deadline, and where to report. */
export interface RunOnceHost {
  readonly options: {
    readonly store: IdempotencyStore | false;
    /** Transactional mode: each event's handlers run in its transaction; `store` is not used. */
    readonly transactions: EventTransactions | undefined;
    readonly handlerTimeoutMs: number | undefined;
    /** The budget of the whole delivery, counted from `startedAt`; undefined: none. */
    readonly deliveryTimeoutMs: number | undefined;
    /** How long a run may hold its claim while its handlers have not settled; undefined: no bound. */
    readonly maxClaimMs: number | undefined;
    /** Where verified deliveries are archived; undefined: nowhere. */
    readonly archive?: WebhookArchive | undefined;
    /** The ordering guard for every handler; undefined: none. */
    readonly ordering?: Ordering | undefined;
    readonly now: () => number;
  };
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

/** One run of one event: its handlers and their context. */
interface Run {
  readonly host: RunOnceHost;
  readonly handlers: readonly AnyHandler[];
  readonly event: AnyEvent;
  /** Transactional mode: `context.transaction` is set once the transaction is open. */
  readonly context: HandlerContext;
  /** Where its failures are reported: `onError`, with the delivery's context. */
  readonly report: (error: WebhookVerificationError) => void;
  /** When `handle()` was called (`performance.now()`): the delivery's budget counts from it. */
  readonly startedAt: number;
  /** The delivery's trace message, when `pixhook:delivery` has subscribers. */
  readonly trace: DeliveryMessage | undefined;
  /** The delivery's archive entry in the making, when there is an archive. */
  readonly draft: DeliveryDraft | undefined;
  /** The event's key (its id, scoped by tenant): named handlers' records are `<key>#<id>`. */
  readonly key: string;
  /** The first failure of a named handler: the others went on, and the run answers it at the end. */
  failure: { readonly cause: unknown } | undefined;
  /** Where the ordering guard's marks are kept: the store, or the event's transaction once open. */
  marks: MarkKeeper;
  /** The ordering guard's decisions in this run, made when a guarded handler first needs one. */
  decisions: Decisions | undefined;
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
  startedAt: number,
  trace?: DeliveryMessage,
  draft?: DeliveryDraft,
): Maybe<Outcome> {
  const report = (error: WebhookVerificationError) => {
    // Made only when something is reported: most deliveries never need it.
    const { request, deliveryId, timestamp, tenant, secret } = context;
    host.reportError(error, { request, deliveryId, timestamp, event, tenant, secret } satisfies ErrorContext);
  };
  const { store, transactions } = host.options;
  // Scoped by tenant when secrets are per tenant: one tenant cannot mark another's event processed.
  const key = context.tenant === undefined ? event.id : eventKey(event.id, context.tenant);
  const run: Run = {
    host,
    handlers,
    event,
    context,
    report,
    startedAt,
    trace,
    draft,
    key,
    failure: undefined,
    marks: { store, open: undefined },
    decisions: undefined,
  };
  const claimed = transactions ? beginEvent(transactions, key, event.type) : claimEvent(store, key, report);
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
  const run = claim.open
    ? {
        ...given,
        context: { ...given.context, transaction: claim.open.transaction },
        marks: { store: false as const, open: claim.open },
      }
    : given;
  const { handlers } = run;
  for (let i = 0; i < handlers.length; i++) {
    let result: unknown;
    try {
      result = call(run, i);
      // Reading `then` may throw too (a hostile getter): that is this handler failing.
      if (isThenable(result)) return underDeadline(run, claim, result, i + 1);
    } catch (cause) {
      if (goesOn(run, i, cause)) continue;
      return stopped(run, claim, cause);
    }
  }
  return ended(run, claim);
}

/**
 * After handler `i` threw: true when the run goes on with the next handler, false when it stops
 * here. A handler skipped by its schema is reported, and the event is acknowledged; a named
 * handler fails alone: the others run, and the run answers its failure at the end (a second one is
 * reported at once). An unnamed handler's failure stops the run, as it always has.
 */
function goesOn(run: Run, i: number, cause: unknown): boolean {
  if (isSchemaMismatch(cause)) {
    run.report(cause);
    return true;
  }
  if (handlerId(run.handlers[i] as AnyHandler) === undefined) return false;
  if (run.failure === undefined) run.failure = { cause };
  else run.report(failureError(run, cause));
  return true;
}

/** An unnamed handler failed: the run stops; a named handler's failure before it is reported too. */
function stopped(run: Run, claim: HeldClaim, cause: unknown): Maybe<Outcome> {
  if (run.failure !== undefined) run.report(failureError(run, run.failure.cause));
  return failed(run, claim, cause);
}

/** Every handler ran: success, or the first named handler's failure. */
function ended(run: Run, claim: HeldClaim): Maybe<Outcome> {
  return run.failure === undefined ? succeeded(run, claim) : failed(run, claim, run.failure.cause);
}

/**
 * Runs the run's handler `i`, timed into the archive's entry when there is one; a named one under
 * its own record; a guarded one only when the event is not stale for its ordering key.
 */
function call(run: Run, i: number): unknown {
  const handler = run.handlers[i] as AnyHandler;
  const meta = handlerMeta(handler);
  const everywhere = run.host.options.ordering;
  // Most handlers: registered without options, no guard for every handler.
  if (meta === undefined && everywhere === undefined) return callOne(run, i, run.context);
  const ordering = meta?.ordering === false ? undefined : (meta?.ordering ?? everywhere);
  if (ordering === undefined) return callRecorded(run, i);
  run.decisions ??= new Map();
  let go: Maybe<boolean>;
  try {
    go = shouldRun(ordering, run.event, run.context.tenant, run.marks, run.decisions, run.report, handler.name);
  } catch (cause) {
    return markFailure(cause);
  }
  const next = (yes: boolean): unknown => {
    if (yes) return callRecorded(run, i);
    traceSkipped(handler, i, run.event, run.context, run.trace);
    return undefined;
  };
  return isThenable(go) ? go.then(next, markFailure) : next(go);
}

/** A failure to keep the ordering marks is answered as it is (503); an ordering function that throws fails the handler. */
function markFailure(cause: unknown): never {
  if (cause instanceof WebhookVerificationError && cause.code === 'STORE_UNAVAILABLE') return recordFailure(cause);
  throw cause;
}

function callRecorded(run: Run, i: number): unknown {
  const handler = run.handlers[i] as AnyHandler;
  const id = handlerId(handler);
  const { store, transactions } = run.host.options;
  if (id === undefined || (!store && !transactions)) return callOne(run, i, run.context);
  return transactions
    ? inOwnTransaction(run, i, transactions, id)
    : underOwnClaim(run, i, store as IdempotencyStore, id);
}

function callOne(run: Run, i: number, context: HandlerContext): unknown {
  const { handlers, event, trace, draft } = run;
  const handler = handlers[i] as AnyHandler;
  return draft
    ? timedCall(draft.runs, handler, i, event, context, trace)
    : callHandler(handler, i, event, context, trace);
}

/** Failures of a named handler's own record (a store down, a claim held elsewhere): answered as they are. */
const RECORD_FAILURES = new WeakSet<WebhookVerificationError>();

function recordFailure(error: WebhookVerificationError): never {
  RECORD_FAILURES.add(error);
  throw error;
}

/**
 * A named handler with a store: its own record (`<key>#<id>`, claimed, then completed or released),
 * so a retry of the event skips it once it succeeded. Synchronous with a `MemoryStore` and a
 * handler that returns no promise.
 */
function underOwnClaim(run: Run, i: number, store: IdempotencyStore, id: string): unknown {
  const claimed = claimEvent(store, handlerKey(run.key, id), run.report);
  const go = (outcome: ClaimOutcome): unknown => {
    // Done by an earlier delivery: skipped.
    if (outcome.kind === 'completed') return undefined;
    if (outcome.kind === 'rejected') return recordFailure(outcome.error);
    const claim = outcome;
    let result: unknown;
    try {
      result = callOne(run, i, run.context);
    } catch (cause) {
      const released = releaseClaim(claim, run.report);
      if (released instanceof Promise) return released.then(() => Promise.reject(cause));
      throw cause;
    }
    if (!isThenable(result)) return completeClaim(claim, run.report);
    return Promise.resolve(result).then(
      () => completeClaim(claim, run.report),
      (cause: unknown) => Promise.resolve(releaseClaim(claim, run.report)).then(() => Promise.reject(cause)),
    );
  };
  return claimed instanceof Promise ? claimed.then(go) : go(claimed);
}

/**
 * Transactional mode, a named handler: its own transaction (`begin('<key>#<id>')`), given to it as
 * `context.transaction`, committed as soon as it succeeds; a retry of the event skips it then.
 */
function inOwnTransaction(run: Run, i: number, transactions: EventTransactions, id: string): Promise<unknown> {
  const own = handlerKey(run.key, id);
  return beginEvent(transactions, own, run.event.type).then(async (outcome) => {
    if (outcome.kind === 'completed') return undefined;
    if (outcome.kind === 'rejected') return recordFailure(outcome.error);
    const open = outcome.open as NonNullable<typeof outcome.open>;
    try {
      await callOne(run, i, { ...run.context, transaction: open.transaction });
    } catch (cause) {
      await Promise.resolve()
        .then(() => open.rollback())
        .catch((failure: unknown) => run.report(rollbackFailed(own, failure)));
      throw cause;
    }
    try {
      const answer = await open.commit();
      const lost = commitReadBack(own, answer);
      if (lost) run.report(lost);
    } catch (cause) {
      recordFailure(commitFailed(own, cause));
    }
    return undefined;
  });
}

/**
 * Transactional mode with an archive: the delivery's entry is written through the event's
 * transaction, so it commits with the event. True when it was written.
 */
function archivedWith(run: Run, transaction: unknown): Promise<boolean> {
  const { draft } = run;
  const archive = run.host.options.archive;
  if (!draft || !archive) return Promise.resolve(false);
  return writeEntry(archive, deliveryEntry(draft, DONE, run.host.options.now()), run.report, transaction);
}

function succeeded(run: Run, claim: HeldClaim): Maybe<Outcome> {
  // Transactional mode: the commit keeps the handlers' writes and the record together, or neither.
  const open = claim.open;
  if (open) {
    return archivedWith(run, open.transaction).then((archived) =>
      new Promise<unknown>((resolve) => resolve(open.commit())).then(
        (answer) => {
          if (archived && run.draft) run.draft.committed = true;
          const lost = commitReadBack(claim.id, answer);
          if (lost) run.report(lost);
          return DONE;
        },
        (cause: unknown) => rejected(run, commitFailed(claim.id, cause)),
      ),
    );
  }
  const recorded = completeClaim(claim, run.report);
  // The handlers succeeded: a completion still being written when the budget ends answers 200 then
  // (it goes on, and a failure is reported), as a completion that fails does.
  return recorded instanceof Promise
    ? withinBudget(
        run,
        recorded.then(() => DONE),
        DONE,
      )
    : DONE;
}

/** The error a handler's failure answers: a failure of a named handler's own record as it is, else `HANDLER_FAILED`. */
function failureError(run: Run, cause: unknown): WebhookVerificationError {
  return cause instanceof WebhookVerificationError && RECORD_FAILURES.has(cause)
    ? cause
    : handlerFailed(run.event, cause);
}

function failed(run: Run, claim: HeldClaim, cause: unknown): Maybe<Outcome> {
  const error = failureError(run, cause);
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
  if (!(released instanceof Promise)) return rejected(run, error);
  // Answered when the budget ends even if the release is still on its way; reported once, when it is done.
  return withinBudget(
    run,
    released.then(() => rejected(run, error)),
    { kind: 'rejected', error },
  );
}

/**
 * Milliseconds left of the delivery's budget (`deliveryTimeoutMs`), at least 1; undefined without
 * one. Rounded down to 10 ms: deadlines are grouped by duration (util/deadlines.ts), so this keeps their
 * number small.
 */
function budgetLeft(run: Run): number | undefined {
  const budget = run.host.options.deliveryTimeoutMs;
  if (budget === undefined) return undefined;
  const left = budget - (performance.now() - run.startedAt);
  return Math.max(1, Math.floor(left / 10) * 10);
}

/** The outcome of `pending`, or `early` once the delivery's budget has passed first. */
function withinBudget(run: Run, pending: Promise<Outcome>, early: Outcome): Promise<Outcome> {
  const ms = budgetLeft(run);
  if (ms === undefined) return pending;
  return new Promise((resolve) => {
    const deadline = setDeadline(ms, () => resolve(early));
    void pending.then((outcome) => {
      cancelDeadline(deadline);
      resolve(outcome);
    });
  });
}

/**
 * Waits for the handler that returned `pending`, runs the rest from `next` one after another, calls
 * `settle` as soon as they have all settled (before the claim is ended), then ends the claim.
 */
async function finishAsync(
  run: Run,
  claim: HeldClaim,
  pending: PromiseLike<unknown>,
  next: number,
  settle: () => void,
): Promise<Outcome> {
  const { handlers } = run;
  for (let i = next - 1; i < handlers.length; i++) {
    try {
      await (i === next - 1 ? pending : call(run, i));
    } catch (cause) {
      if (goesOn(run, i, cause)) continue;
      settle();
      return stopped(run, claim, cause);
    }
  }
  settle();
  return ended(run, claim);
}

/** The deadline for the answer while handlers run: `handlerTimeoutMs` or what is left of the budget, the earlier. */
function answerDeadline(run: Run): { ms: number; option: string; total: number } | undefined {
  const { handlerTimeoutMs, deliveryTimeoutMs } = run.host.options;
  const left = budgetLeft(run);
  if (
    left !== undefined &&
    deliveryTimeoutMs !== undefined &&
    (handlerTimeoutMs === undefined || left < handlerTimeoutMs)
  ) {
    return { ms: left, option: 'deliveryTimeoutMs', total: deliveryTimeoutMs };
  }
  return handlerTimeoutMs === undefined
    ? undefined
    : { ms: handlerTimeoutMs, option: 'handlerTimeoutMs', total: handlerTimeoutMs };
}

/**
 * Runs the handlers from the one that returned `pending` and answers their outcome, or
 * `HANDLER_TIMEOUT` once `handlerTimeoutMs` (from now) or the delivery's budget (from the call of
 * `handle()`) passes first: then the handlers keep running. From now until they settle the claim is
 * renewed (a claim must not expire under a running handler, whatever `inFlightTtlMs` and the
 * deadlines are), for at most `maxClaimMs`: then it is released so that a retry can run the event,
 * and `onError` hears `CLAIM_RELEASED`. The deadlines count from the first handler that went
 * asynchronous: a synchronous stretch cannot be interrupted anyway.
 */
function underDeadline(run: Run, claim: HeldClaim, pending: PromiseLike<unknown>, next: number): Promise<Outcome> {
  const maxClaimMs = run.host.options.maxClaimMs;
  const limit = answerDeadline(run);
  return new Promise((resolve) => {
    let answered = false;
    const answer = (outcome: Outcome) => {
      if (answered) return;
      answered = true;
      resolve(outcome);
    };
    const stopRenewing = keepClaim(claim, run.report);
    const timeout =
      limit &&
      setDeadline(limit.ms, () => {
        if (answered) return;
        answer(
          rejected(
            run,
            new WebhookVerificationError(
              'HANDLER_TIMEOUT',
              `The handlers for ${run.event.type} did not finish within ${limit.option} (${limit.total} ms); they keep running and hold the event's claim until they end${maxClaimMs === undefined || !claim.store ? '' : ` (at most maxClaimMs, ${maxClaimMs} ms)`}, and the service will retry.`,
            ),
          ),
        );
      });
    const bound =
      maxClaimMs === undefined || !claim.store
        ? undefined
        : setDeadline(maxClaimMs, () => {
            stopRenewing();
            if (timeout) cancelDeadline(timeout);
            const tell = () => {
              run.report(
                new WebhookVerificationError(
                  'CLAIM_RELEASED',
                  `The handlers for ${run.event.type} (event ${run.event.id}) had not settled after maxClaimMs (${maxClaimMs} ms), so pixhook released the event's claim and the service's next retry can run it. They were not stopped and may still be running: that retry may run the event beside them.`,
                ),
              );
              if (answered) return;
              answer(
                rejected(
                  run,
                  new WebhookVerificationError(
                    'HANDLER_TIMEOUT',
                    `The handlers for ${run.event.type} did not finish within maxClaimMs (${maxClaimMs} ms); the event's claim was released and the service will retry.`,
                  ),
                ),
              );
            };
            const released = releaseClaim(claim, run.report);
            if (released instanceof Promise) void released.then(tell);
            else tell();
          });
    const settle = () => {
      if (timeout) cancelDeadline(timeout);
      if (bound) cancelDeadline(bound);
      stopRenewing();
    };
    void finishAsync(run, claim, pending, next, settle).then(answer);
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
