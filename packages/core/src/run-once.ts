import type { AnyHandler, ErrorContext, HandlerContext } from './context.js';
import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';
import type { IdempotencyStore } from './store.js';
import { claimEvent } from './store-protocol.js';

/** What running a verified event once came to, for the pipeline to answer. */
export type Outcome = { kind: 'done'; duplicate: boolean } | { kind: 'rejected'; error: WebhookVerificationError };

/** What `runOnce` needs from its host: the store, the deadline, and where to report. */
export interface RunOnceHost {
  readonly options: { readonly store: IdempotencyStore | false; readonly handlerTimeoutMs: number | undefined };
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

const DONE: Outcome = { kind: 'done', duplicate: false };
const DUPLICATE: Outcome = { kind: 'done', duplicate: true };

async function runHandlers(handlers: readonly AnyHandler[], event: AnyEvent, context: HandlerContext): Promise<void> {
  for (const handler of handlers) await handler(event, context);
}

/**
 * Runs a verified event's handlers at most once at a time across deliveries: claim it in the store,
 * run the handlers under the handler deadline, then complete or release the claim.
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
  const report = (error: WebhookVerificationError) => host.reportError(error, errorContext);
  const rejected = (error: WebhookVerificationError): Outcome => {
    report(error);
    return { kind: 'rejected', error };
  };
  const claimed = await claimEvent(host.options.store, event.id, report);
  if (claimed.kind === 'completed') return DUPLICATE;
  if (claimed.kind === 'rejected') return rejected(claimed.error);
  const { claim } = claimed;

  const settled = runHandlers(handlers, event, context).then(
    () => claim.complete().then(() => DONE),
    (cause: unknown) => claim.release().then(() => rejected(handlerFailed(event, cause))),
  );
  const timeoutMs = host.options.handlerTimeoutMs;
  if (timeoutMs === undefined) return settled;
  return new Promise((resolve) => {
    let stopKeeping: (() => void) | undefined;
    const timer = setTimeout(() => {
      stopKeeping = claim.keep();
      resolve(
        rejected(
          new WebhookVerificationError(
            'HANDLER_TIMEOUT',
            `The handlers for ${event.type} did not finish within handlerTimeoutMs (${timeoutMs} ms); they keep running and hold the event's claim until they end, and the service will retry.`,
          ),
        ),
      );
    }, timeoutMs);
    void settled.then((outcome) => {
      clearTimeout(timer);
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
