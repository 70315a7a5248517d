import type { AnyHandler, ErrorContext, HandlerContext } from './context.js';
import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';
import { type ClaimResult, DEFAULT_IN_FLIGHT_TTL_MS, type IdempotencyStore } from './store.js';

/** What running a verified event once came to, for the pipeline to answer. */
export type Outcome = { kind: 'done'; duplicate: boolean } | { kind: 'rejected'; error: WebhookVerificationError };

/** What `runOnce` needs from its host: the store, the deadline, and where to report. */
export interface RunOnceHost {
  readonly options: { readonly store: IdempotencyStore | false; readonly handlerTimeoutMs: number | undefined };
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

const DONE: Outcome = { kind: 'done', duplicate: false };
const DUPLICATE: Outcome = { kind: 'done', duplicate: true };

// Claim tokens: unique across processes (a random prefix) and cheap per request (a counter).
let tokenPrefix: string | undefined;
let tokenCount = 0;
function nextToken(): string {
  tokenPrefix ??= `${globalThis.crypto.randomUUID()}:`;
  return tokenPrefix + (++tokenCount).toString(36);
}

function rejected(host: RunOnceHost, error: WebhookVerificationError, context: ErrorContext): Outcome {
  host.reportError(error, context);
  return { kind: 'rejected', error };
}

function storeError(message: string, cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError('STORE_UNAVAILABLE', message, { cause });
}

async function claim(store: IdempotencyStore, id: string, token: string): Promise<ClaimResult> {
  const result = await store.claim(id, token);
  if (result !== 'claimed' && result !== 'in-flight' && result !== 'completed') {
    throw new TypeError(`store.claim() answered ${JSON.stringify(result)}, not claimed/in-flight/completed`);
  }
  return result;
}

async function runHandlers(handlers: readonly AnyHandler[], event: AnyEvent, context: HandlerContext): Promise<void> {
  for (const handler of handlers) await handler(event, context);
}

/**
 * Runs a verified event's handlers at most once at a time across deliveries: claim it in the store,
 * run the handlers under the handler deadline, then record the completion or drop the claim.
 * Never rejects: every failure becomes an outcome, and every failure (those after the answer too)
 * is reported to `onError` here.
 */
export async function runOnce(
  host: RunOnceHost,
  handlers: readonly AnyHandler[],
  event: AnyEvent,
  context: HandlerContext,
  errorContext: ErrorContext,
): Promise<Outcome> {
  const { store } = host.options;
  const token = store ? nextToken() : '';
  if (store) {
    let claimed: ClaimResult;
    try {
      claimed = await claim(store, event.id, token);
    } catch (cause) {
      return rejected(
        host,
        storeError(
          'The idempotency store is unavailable, so the event was not processed; the service will retry it.',
          cause,
        ),
        errorContext,
      );
    }
    const warning = store.takeWarning?.();
    if (warning) {
      host.reportError(
        new WebhookVerificationError('DUPLICATE_WINDOW_SHORTENED', warning.message, { cause: warning }),
        errorContext,
      );
    }
    if (claimed === 'completed') return DUPLICATE;
    if (claimed === 'in-flight') {
      return rejected(
        host,
        new WebhookVerificationError(
          'IN_FLIGHT',
          'This event is still being processed by an earlier delivery; it was not run again.',
        ),
        errorContext,
      );
    }
  }

  const settled = runHandlers(handlers, event, context).then(
    () => settle(host, event, token, undefined, errorContext),
    (cause: unknown) => settle(host, event, token, { cause }, errorContext),
  );
  const timeoutMs = host.options.handlerTimeoutMs;
  if (timeoutMs === undefined) return settled;
  return new Promise((resolve) => {
    let stopRenewing: (() => void) | undefined;
    const timer = setTimeout(() => {
      const error = new WebhookVerificationError(
        'HANDLER_TIMEOUT',
        `The handlers for ${event.type} did not finish within handlerTimeoutMs (${timeoutMs} ms); they keep running and hold the event's claim until they end, and the service will retry.`,
      );
      if (store) stopRenewing = renewClaim(host, store, event.id, token, errorContext);
      resolve(rejected(host, error, errorContext));
    }, timeoutMs);
    void settled.then((outcome) => {
      clearTimeout(timer);
      stopRenewing?.();
      resolve(outcome);
    });
  });
}

/** Records the end of a run: completion after success, release after a failure. */
async function settle(
  host: RunOnceHost,
  event: AnyEvent,
  token: string,
  failure: { cause: unknown } | undefined,
  errorContext: ErrorContext,
): Promise<Outcome> {
  const { store } = host.options;
  if (failure) {
    if (store) {
      try {
        await store.release(event.id, token);
      } catch (cause) {
        host.reportError(
          storeError(
            `The store could not release event ${event.id} after a handler failed; retries may answer 409 until the store takes the release or the claim expires.`,
            cause,
          ),
          errorContext,
        );
      }
    }
    const error = new WebhookVerificationError(
      'HANDLER_FAILED',
      // The answer must not repeat the handler's message: it may hold internal details.
      `A handler for ${event.type} failed; the event was not marked processed, so the service's retry will run it again.`,
      { cause: failure.cause },
    );
    return rejected(host, error, errorContext);
  }
  if (store) {
    try {
      await store.complete(event.id, token);
    } catch (cause) {
      // The work is done: answering an error would only make the service send it again.
      host.reportError(
        storeError(
          `Handlers for event ${event.id} succeeded but the store could not record it; a redelivery may run them again.`,
          cause,
        ),
        errorContext,
      );
    }
  }
  return DONE;
}

/**
 * Keeps renewing the claim of a run that outlived the handler deadline, so that no retry runs the
 * event beside it; returns the function that stops. Only stores with `extend` can.
 */
function renewClaim(
  host: RunOnceHost,
  store: IdempotencyStore,
  id: string,
  token: string,
  errorContext: ErrorContext,
): (() => void) | undefined {
  const extend = store.extend;
  if (typeof extend !== 'function') return undefined;
  const ttl = store.inFlightTtlMs;
  const every = Math.max(1, Math.floor((typeof ttl === 'number' && ttl > 0 ? ttl : DEFAULT_IN_FLIGHT_TTL_MS) / 3));
  let reported = false;
  const report = (message: string, cause?: unknown) => {
    if (reported) return;
    reported = true;
    host.reportError(storeError(message, cause), errorContext);
  };
  const interval = setInterval(() => {
    Promise.resolve()
      .then(() => extend.call(store, id, token))
      .then(
        (kept) => {
          if (kept !== false) return;
          clearInterval(interval);
          report(
            `The claim on event ${id} expired while its handlers ran past the deadline; a retry may run it beside them.`,
          );
        },
        // The store may be back by the next tick: keep trying, and say it once.
        (cause: unknown) =>
          report(
            `The claim on event ${id} could not be renewed while its handlers ran past the deadline; retrying.`,
            cause,
          ),
      );
  }, every);
  // The run itself keeps the process alive while it works; the renewals must not.
  interval.unref?.();
  return () => clearInterval(interval);
}
