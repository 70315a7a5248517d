import { admit, headersOf } from './admit.js';
import { answer, answerOutcome, ok } from './answer.js';
import type { AnyHandler, ErrorContext } from './context.js';
import { isWebhookVerificationError, WebhookVerificationError } from './errors.js';
import type { HandleInput, WebhookResponse } from './handle-input.js';
import { getHeader, HEADER, type HeadersInput } from './headers.js';
import type { ResolvedOptions } from './options.js';
import { runOnce } from './run-once.js';
import type { VerifiedDelivery } from './verify.js';

/** What the pipeline needs from a `Webhooks`: its options, the handlers of a type, where to report. */
export interface PipelineHost {
  readonly options: ResolvedOptions;
  handlersFor(type: string): readonly AnyHandler[];
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

function unexpected(cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'INTERNAL_ERROR',
    'pixhook failed unexpectedly while handling this delivery; the service will retry it.',
    { cause },
  );
}

/** The whole request pipeline behind `webhooks.handle()`. Never rejects, whatever it is given. */
export function runPipeline(host: PipelineHost, input: HandleInput): Promise<WebhookResponse> {
  // Not async, and the callbacks capture only the request and headers: nothing holds `input` (and a
  // body passed in it) once it is admitted, so the raw bytes can be freed while handlers run.
  const given = (typeof input === 'object' && input !== null ? input : {}) as HandleInput;
  const { request } = given;
  const headers = headersOf(given.headers);
  // admit is async: whatever it meets, even a throwing header getter, arrives as a rejection.
  return admit(host.options, given, headers)
    .then(
      (delivery) => runAndAnswer(host, delivery, request),
      (cause: unknown) => {
        const error = isWebhookVerificationError(cause) ? cause : unexpected(cause);
        host.reportError(error, { request, deliveryId: unverifiedDeliveryId(headers) });
        return answer(error);
      },
    )
    .catch((cause: unknown) => {
      const error = unexpected(cause);
      host.reportError(error, { request });
      return answer(error);
    });
}

function unverifiedDeliveryId(headers: HeadersInput): string | undefined {
  try {
    return getHeader(headers, HEADER.delivery) || undefined;
  } catch {
    return undefined;
  }
}

/** Runs a verified delivery's handlers once (store and deadline included) and answers how that went. */
async function runAndAnswer(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  request: unknown,
): Promise<WebhookResponse> {
  const { event, deliveryId, timestamp } = delivery;
  const handlers = host.handlersFor(event.type);
  // Nothing to run: acknowledge without a round trip to the store.
  if (handlers.length === 0) return ok(false);
  const outcome = await runOnce(
    host,
    handlers,
    event,
    { deliveryId, timestamp, request },
    { request, deliveryId, timestamp, event },
  );
  return answerOutcome(outcome);
}
