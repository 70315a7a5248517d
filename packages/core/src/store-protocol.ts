import { WebhookVerificationError } from './errors.js';
import { type ClaimResult, DEFAULT_IN_FLIGHT_TTL_MS, type IdempotencyStore } from './store.js';

/**
 * How core drives an `IdempotencyStore`: every call it makes (claim, complete, release, extend),
 * with the claim token, and every failure message those calls can lead to. Nothing here rejects:
 * a failure that changes the answer is returned, one that comes after it is reported.
 */

/** Where failures that do not change the answer go (`onError`, with the delivery's context). */
export type Report = (error: WebhookVerificationError) => void;

/** A claim held on one event for one run: the calls that end it, and the one that keeps it. */
export interface HeldClaim {
  /** All handlers succeeded: record the event as processed. */
  complete(): Promise<void>;
  /** A handler failed: drop the claim, so the service's retry may run the event again. */
  release(): Promise<void>;
  /** The run outlived the handler deadline: keep renewing the claim until the returned stop is called. */
  keep(): () => void;
}

/** What claiming an event came to: run the handlers, acknowledge a duplicate, or answer an error. */
export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly claim: HeldClaim }
  | { readonly kind: 'completed' }
  | { readonly kind: 'rejected'; readonly error: WebhookVerificationError };

const NO_STORE: ClaimOutcome = {
  kind: 'claimed',
  claim: { complete: async () => {}, release: async () => {}, keep: () => () => {} },
};
const COMPLETED: ClaimOutcome = { kind: 'completed' };

// Claim tokens: unique across processes (a random prefix) and cheap per request (a counter).
let tokenPrefix: string | undefined;
let tokenCount = 0;
function nextToken(): string {
  tokenPrefix ??= `${globalThis.crypto.randomUUID()}:`;
  return tokenPrefix + (++tokenCount).toString(36);
}

function storeError(message: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError('STORE_UNAVAILABLE', message, { cause });
}

/**
 * Claims `eventId` in `store` for one run (with `store === false`, every event is claimed). A
 * store that fails or answers something else is `STORE_UNAVAILABLE`; an event another delivery
 * still runs is `IN_FLIGHT`. A warning the store hands over (`takeWarning`) is reported.
 */
export async function claimEvent(
  store: IdempotencyStore | false,
  eventId: string,
  report: Report,
): Promise<ClaimOutcome> {
  if (!store) return NO_STORE;
  const token = nextToken();
  let result: ClaimResult;
  try {
    result = await store.claim(eventId, token);
    if (result !== 'claimed' && result !== 'in-flight' && result !== 'completed') {
      throw new TypeError(`pixhook: store.claim() answered ${JSON.stringify(result)}, not claimed/in-flight/completed`);
    }
  } catch (cause) {
    return {
      kind: 'rejected',
      error: storeError(
        'The idempotency store is unavailable, so the event was not processed; the service will retry it.',
        cause,
      ),
    };
  }
  const warning = store.takeWarning?.();
  if (warning) report(new WebhookVerificationError('DUPLICATE_WINDOW_SHORTENED', warning.message, { cause: warning }));
  if (result === 'completed') return COMPLETED;
  if (result === 'in-flight') {
    return {
      kind: 'rejected',
      error: new WebhookVerificationError(
        'IN_FLIGHT',
        'This event is still being processed by an earlier delivery; it was not run again.',
      ),
    };
  }
  return { kind: 'claimed', claim: heldClaim(store, eventId, token, report) };
}

function heldClaim(store: IdempotencyStore, id: string, token: string, report: Report): HeldClaim {
  return {
    async complete() {
      try {
        await store.complete(id, token);
      } catch (cause) {
        // The work is done: answering an error would only make the service send it again.
        report(
          storeError(
            `Handlers for event ${id} succeeded but the store could not record it; a redelivery may run them again.`,
            cause,
          ),
        );
      }
    },
    async release() {
      try {
        await store.release(id, token);
      } catch (cause) {
        report(
          storeError(
            `The store could not release event ${id} after a handler failed; retries may answer 409 until the store takes the release or the claim expires.`,
            cause,
          ),
        );
      }
    },
    keep: () => renewClaim(store, id, token, report),
  };
}

/**
 * Keeps renewing the claim of a run that outlived the handler deadline, so that no retry runs the
 * event beside it; returns the function that stops. Only stores with `extend` can.
 */
function renewClaim(store: IdempotencyStore, id: string, token: string, report: Report): () => void {
  const extend = store.extend;
  if (typeof extend !== 'function') return () => {};
  const ttl = store.inFlightTtlMs;
  const every = Math.max(1, Math.floor((typeof ttl === 'number' && ttl > 0 ? ttl : DEFAULT_IN_FLIGHT_TTL_MS) / 3));
  let reported = false;
  const reportOnce = (message: string, cause?: unknown) => {
    if (reported) return;
    reported = true;
    report(storeError(message, cause));
  };
  const interval = setInterval(() => {
    Promise.resolve()
      .then(() => extend.call(store, id, token))
      .then(
        (kept) => {
          if (kept !== false) return;
          clearInterval(interval);
          reportOnce(
            `The claim on event ${id} expired while its handlers ran past the deadline; a retry may run it beside them.`,
          );
        },
        // The store may be back by the next tick: keep trying, and say it once.
        (cause: unknown) =>
          reportOnce(
            `The claim on event ${id} could not be renewed while its handlers ran past the deadline; retrying.`,
            cause,
          ),
      );
  }, every);
  // The run itself keeps the process alive while it works; the renewals must not.
  interval.unref?.();
  return () => clearInterval(interval);
}
