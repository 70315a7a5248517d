import { enqueue } from '../modes/queued.js';
import { runOnce } from '../modes/run-once.js';
import { isWebhookVerificationError, WebhookVerificationError } from '../protocol/errors.js';
import { type DeliveryHeaders, readDeliveryHeaders } from '../protocol/headers.js';
import type { VerifiedDelivery } from '../protocol/verify.js';
import type { AnyHandler, ErrorContext } from '../seams/context.js';
import type { HandleInput, WebhookResponse } from '../seams/handle-input.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import { admitBody, checkMethod, headersOf, readFailure, receive } from './admit.js';
import { answer, answerOutcome, ok } from './answer.js';
import type { ResolvedOptions } from './options.js';

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

/**
 * The whole request pipeline behind `webhooks.handle()`. Never rejects, whatever it is given.
 * Synchronous until something is asynchronous: a delivery whose body is here, verified on
 * `node:crypto`, claimed in a `MemoryStore` and handled by handlers that return no promise is
 * answered with one resolved promise; a body still arriving costs one more microtask hop, when
 * it has.
 */
export function runPipeline(host: PipelineHost, input: HandleInput): Promise<WebhookResponse> {
  // The delivery's budget (deliveryTimeoutMs) counts from here: adapters call handle() as the
  // request's headers arrive, before its body is read.
  const startedAt = performance.now();
  // Nothing from here on holds `input` (and a body passed in it) once it is admitted, so the raw
  // bytes can be freed while handlers run: the callbacks capture only the request and the headers.
  let request: unknown;
  // The headers are read once, here: everything after uses what was read.
  let headers: DeliveryHeaders | undefined;
  let raw: unknown;
  try {
    const given = (typeof input === 'object' && input !== null ? input : {}) as HandleInput;
    request = given.request;
    headers = readDeliveryHeaders(headersOf(given.headers), true);
    checkMethod(given.method);
    raw = receive(host.options, given, headers);
  } catch (cause) {
    return Promise.resolve(refused(host, cause, request, headers));
  }
  const read = headers;
  if (!isThenable(raw)) return Promise.resolve(proceed(host, raw, read, request, startedAt));
  const limit = host.options.maxBodyBytes;
  return Promise.resolve(raw).then(
    (body) => proceed(host, body, read, request, startedAt),
    (cause: unknown) => refused(host, readFailure(cause, limit), request, read),
  );
}

/** From a body that has arrived to the answer. Never throws; a promise from it never rejects. */
function proceed(
  host: PipelineHost,
  raw: unknown,
  headers: DeliveryHeaders,
  request: unknown,
  startedAt: number,
): Maybe<WebhookResponse> {
  let delivery: Maybe<VerifiedDelivery>;
  try {
    delivery = admitBody(host.options, raw, headers);
  } catch (cause) {
    return refused(host, cause, request, headers);
  }
  if (delivery instanceof Promise) {
    return delivery.then(
      (verified) => answerFor(host, verified, request, startedAt),
      (cause: unknown) => refused(host, cause, request, headers),
    );
  }
  return answerFor(host, delivery, request, startedAt);
}

function answerFor(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  request: unknown,
  startedAt: number,
): Maybe<WebhookResponse> {
  let answered: Maybe<WebhookResponse>;
  try {
    answered = runAndAnswer(host, delivery, request, startedAt);
  } catch (cause) {
    return failedUnexpectedly(host, cause, request);
  }
  return answered instanceof Promise
    ? answered.catch((cause: unknown) => failedUnexpectedly(host, cause, request))
    : answered;
}

/**
 * The answer to a request refused before its handlers (4xx, or 500 for a failure of pixhook's own).
 * Never throws.
 */
function refused(
  host: PipelineHost,
  cause: unknown,
  request: unknown,
  headers: DeliveryHeaders | undefined,
): WebhookResponse {
  try {
    const error = isWebhookVerificationError(cause) ? cause : unexpected(cause);
    // Unverified: the delivery id as sent, for the report only (undefined when empty or unread).
    host.reportError(error, { request, deliveryId: headers?.delivery || undefined });
    return answer(error);
  } catch (failure) {
    return failedUnexpectedly(host, failure, request);
  }
}

function failedUnexpectedly(host: PipelineHost, cause: unknown, request: unknown): WebhookResponse {
  const error = unexpected(cause);
  host.reportError(error, { request });
  return answer(error);
}

/** Runs a verified delivery's handlers once (store and deadline included) and answers how that went. */
function runAndAnswer(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  request: unknown,
  startedAt: number,
): Maybe<WebhookResponse> {
  const queue = host.options.queue;
  // Queued mode: every verified event is queued, handlers or not here (a receiver often has none:
  // they are registered in the workers).
  if (queue !== undefined) return enqueue(host, queue, delivery, request, startedAt).then(answerOutcome);
  const { event, deliveryId, timestamp } = delivery;
  const handlers = host.handlersFor(event.type);
  // Nothing to run: acknowledge without a round trip to the store.
  if (handlers.length === 0) return ok(false);
  const outcome = runOnce(host, handlers, event, { deliveryId, timestamp, request }, startedAt);
  return outcome instanceof Promise ? outcome.then(answerOutcome) : answerOutcome(outcome);
}
