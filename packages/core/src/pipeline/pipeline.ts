import { admitBody, headersOf, readFailure, receive } from './admit.js';
import { answer, answerOutcome, ok } from './answer.js';
import type { AnyHandler, ErrorContext } from '../seams/context.js';
import { isWebhookVerificationError, WebhookVerificationError } from '../protocol/errors.js';
import type { HandleInput, WebhookResponse } from '../seams/handle-input.js';
import { getHeader, HEADER, type HeadersInput } from '../protocol/headers.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import type { ResolvedOptions } from './options.js';
import { enqueueAndAnswer } from '../modes/queued.js';
import { runOnce } from '../modes/run-once.js';
import type { VerifiedDelivery } from '../protocol/verify.js';

const NO_HEADERS: HeadersInput = {};

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
  let headers: HeadersInput = NO_HEADERS;
  let raw: unknown;
  try {
    const given = (typeof input === 'object' && input !== null ? input : {}) as HandleInput;
    request = given.request;
    headers = headersOf(given.headers);
    raw = receive(host.options, given, headers);
  } catch (cause) {
    return Promise.resolve(refused(host, cause, request, headers));
  }
  if (!isThenable(raw)) return Promise.resolve(proceed(host, raw, headers, request, startedAt));
  const limit = host.options.maxBodyBytes;
  return Promise.resolve(raw).then(
    (body) => proceed(host, body, headers, request, startedAt),
    (cause: unknown) => refused(host, readFailure(cause, limit), request, headers),
  );
}

/** From a body that has arrived to the answer. Never throws; a promise from it never rejects. */
function proceed(
  host: PipelineHost,
  raw: unknown,
  headers: HeadersInput,
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
function refused(host: PipelineHost, cause: unknown, request: unknown, headers: HeadersInput): WebhookResponse {
  try {
    const error = isWebhookVerificationError(cause) ? cause : unexpected(cause);
    host.reportError(error, { request, deliveryId: unverifiedDeliveryId(headers) });
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

function unverifiedDeliveryId(headers: HeadersInput): string | undefined {
  try {
    return getHeader(headers, HEADER.delivery) || undefined;
  } catch {
    return undefined;
  }
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
  if (queue !== undefined) return enqueueAndAnswer(host, queue, delivery, request, startedAt);
  const { event, deliveryId, timestamp } = delivery;
  const handlers = host.handlersFor(event.type);
  // Nothing to run: acknowledge without a round trip to the store.
  if (handlers.length === 0) return ok(false);
  const outcome = runOnce(host, handlers, event, { deliveryId, timestamp, request }, startedAt);
  return outcome instanceof Promise ? outcome.then(answerOutcome) : answerOutcome(outcome);
}
