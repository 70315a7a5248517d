import { type DeliveryDraft, deliveryEntry, recordedHeaders, writeEntry } from '../modes/archiving.js';
import { DONE, type Outcome } from '../modes/outcome.js';
import { enqueue } from '../modes/queued.js';
import { runOnce } from '../modes/run-once.js';
import { toBytes } from '../protocol/crypto.js';
import { endpointAtRisk, isWebhookVerificationError, WebhookVerificationError } from '../protocol/errors.js';
import { type DeliveryHeaders, readDeliveryHeaders } from '../protocol/headers.js';
import { estimateAttempt } from '../protocol/retry-schedule.js';
import type { VerifiedDelivery } from '../protocol/verify.js';
import type { AnyHandler, ErrorContext, HandlerContext } from '../seams/context.js';
import { type DeliveryMessage, deliveryChannel, traceStep } from '../seams/diagnostics.js';
import type { HandleInput, WebhookResponse } from '../seams/handle-input.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import { admitBody, checkMethod, headersOf, readFailure, receive } from './admit.js';
import { answer, answeredCode, answerOutcome, isDuplicateAnswer, ok } from './answer.js';
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
  if (!deliveryChannel.hasSubscribers) return pipeline(host, input, undefined);
  const { queue, transactions } = host.options;
  const trace: DeliveryMessage = {
    mode: queue !== undefined ? 'queued' : transactions !== undefined ? 'transactional' : 'inline',
    deliveryId: undefined,
    eventType: undefined,
    eventId: undefined,
    created: undefined,
    timestamp: undefined,
    secretIndex: undefined,
    verifyMs: undefined,
    attempt: undefined,
    status: undefined,
    code: undefined,
    outcome: undefined,
    lastChance: false,
  };
  return traceStep(deliveryChannel, trace, () =>
    pipeline(host, input, trace).then((response) => outcomeOf(trace, response)),
  );
}

/** Fills in the trace's answer: its status, what it means, and the error code of a refusal. */
function outcomeOf(trace: DeliveryMessage, response: WebhookResponse): WebhookResponse {
  trace.status = response.status;
  if (response.status === 202) trace.outcome = 'queued';
  else if (response.status >= 200 && response.status < 300) {
    trace.outcome = isDuplicateAnswer(response) ? 'duplicate' : 'processed';
  } else {
    trace.outcome = 'rejected';
    trace.code = answeredCode(response);
  }
  return response;
}

function pipeline(
  host: PipelineHost,
  input: HandleInput,
  trace: DeliveryMessage | undefined,
): Promise<WebhookResponse> {
  // The delivery's budget (deliveryTimeoutMs) counts from here: adapters call handle() as the
  // request's headers arrive, before its body is read.
  const startedAt = performance.now();
  // Nothing from here on holds `input` (and a body passed in it) once it is admitted, so the raw
  // bytes can be freed while handlers run: the callbacks capture only the request and the headers.
  let request: unknown;
  // The headers are read once, here: everything after uses what was read.
  let headers: DeliveryHeaders | undefined;
  let raw: unknown;
  // With an archive, the request's headers as received are kept for it.
  let received: unknown;
  // With secrets per tenant, whose delivery this says it is (unsigned until verified).
  let tenant: unknown;
  try {
    const given = (typeof input === 'object' && input !== null ? input : {}) as HandleInput;
    request = given.request;
    if (host.options.archive) received = given.headers;
    if (host.options.tenantSecrets) tenant = given.tenant;
    headers = readDeliveryHeaders(headersOf(given.headers), true);
    if (trace) trace.deliveryId = headers.delivery;
    checkMethod(given.method);
    raw = receive(host.options, given, headers);
  } catch (cause) {
    return Promise.resolve(refused(host, cause, request, headers, tenant));
  }
  const read = headers;
  if (!isThenable(raw)) return Promise.resolve(proceed(host, raw, read, request, startedAt, trace, received, tenant));
  const limit = host.options.maxBodyBytes;
  return Promise.resolve(raw).then(
    (body) => proceed(host, body, read, request, startedAt, trace, received, tenant),
    (cause: unknown) => refused(host, readFailure(cause, limit), request, read, tenant),
  );
}

/** From a body that has arrived to the answer. Never throws; a promise from it never rejects. */
function proceed(
  host: PipelineHost,
  raw: unknown,
  headers: DeliveryHeaders,
  request: unknown,
  startedAt: number,
  trace: DeliveryMessage | undefined,
  received: unknown,
  tenant: unknown,
): Maybe<WebhookResponse> {
  const verifying = trace ? performance.now() : 0;
  let delivery: Maybe<VerifiedDelivery>;
  try {
    delivery = admitBody(host.options, raw, headers, tenant);
  } catch (cause) {
    if (trace) trace.verifyMs = performance.now() - verifying;
    return refused(host, cause, request, headers, tenant);
  }
  if (delivery instanceof Promise) {
    return delivery.then(
      (verified) =>
        answerFor(
          host,
          verified,
          request,
          startedAt,
          trace && traced(trace, verified, verifying),
          draftOf(host, verified, raw, received, startedAt),
        ),
      (cause: unknown) => {
        if (trace) trace.verifyMs = performance.now() - verifying;
        return refused(host, cause, request, headers, tenant);
      },
    );
  }
  return answerFor(
    host,
    delivery,
    request,
    startedAt,
    trace && traced(trace, delivery, verifying),
    draftOf(host, delivery, raw, received, startedAt),
  );
}

/** With an archive, the entry of a verified delivery, to be completed with its outcome; else undefined. */
function draftOf(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  raw: unknown,
  received: unknown,
  startedAt: number,
): DeliveryDraft | undefined {
  const { queue, transactions, archive } = host.options;
  if (archive === undefined) return undefined;
  return {
    delivery,
    body: toBytes(raw as Uint8Array | string),
    headers: recordedHeaders(received),
    mode: queue !== undefined ? 'queued' : transactions !== undefined ? 'transactional' : 'inline',
    startedAt,
    runs: [],
    committed: false,
  };
}

/**
 * Writes the delivery's entry to the archive once its outcome is known, before the answer, within
 * what is left of the delivery's budget; then gives the outcome back unchanged. Never rejects.
 */
function archived(
  host: PipelineHost,
  draft: DeliveryDraft | undefined,
  outcome: Outcome,
  request: unknown,
): Maybe<Outcome> {
  const archive = host.options.archive;
  if (!draft || !archive || draft.committed) return outcome;
  const { event, deliveryId, timestamp, tenant, secret } = draft.delivery;
  const budget = host.options.deliveryTimeoutMs;
  const left = budget === undefined ? undefined : budget - (performance.now() - draft.startedAt);
  return writeEntry(
    archive,
    deliveryEntry(draft, outcome, host.options.now()),
    (error) => host.reportError(error, { request, deliveryId, timestamp, event, tenant, secret }),
    undefined,
    left,
  ).then(() => outcome);
}

/** The trace of a verified delivery: what the signed data says, and how long verifying took. */
function traced(trace: DeliveryMessage, delivery: VerifiedDelivery, verifying: number): DeliveryMessage {
  trace.verifyMs = performance.now() - verifying;
  const { event, timestamp, secretIndex } = delivery;
  trace.eventType = event.type;
  trace.eventId = event.id;
  trace.created = event.created;
  trace.timestamp = timestamp;
  trace.secretIndex = secretIndex;
  trace.attempt = estimateAttempt(event.created, timestamp).attempt;
  return trace;
}

function answerFor(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  request: unknown,
  startedAt: number,
  trace: DeliveryMessage | undefined,
  draft: DeliveryDraft | undefined,
): Maybe<WebhookResponse> {
  let answered: Maybe<WebhookResponse>;
  try {
    answered = runAndAnswer(host, delivery, request, startedAt, trace, draft);
  } catch (cause) {
    return lastChance(host, delivery, request, failedUnexpectedly(host, cause, request), trace);
  }
  return answered instanceof Promise
    ? answered.then(
        (response) => lastChance(host, delivery, request, response, trace),
        (cause: unknown) => lastChance(host, delivery, request, failedUnexpectedly(host, cause, request), trace),
      )
    : lastChance(host, delivery, request, answered, trace);
}

/**
 * The last-chance alarm: an answer other than 2xx to what is probably one of the service's last two
 * attempts of a delivery (estimated from the signed `created` and `t`, see `estimateAttempt`) is told
 * to `onError` as `ENDPOINT_AT_RISK`, with the time left and what to do: one more failure (of the
 * last attempt) and the service auto-disables the endpoint. Returns the response unchanged.
 */
function lastChance(
  host: PipelineHost,
  delivery: VerifiedDelivery,
  request: unknown,
  response: WebhookResponse,
  trace: DeliveryMessage | undefined,
): WebhookResponse {
  if (response.status < 300) return response;
  try {
    const { event, deliveryId, timestamp, tenant, secret } = delivery;
    const estimate = estimateAttempt(event.created, timestamp);
    if (estimate.attemptsLeft > 1) return response;
    if (trace) trace.lastChance = true;
    host.reportError(endpointAtRisk(event.type, event.id, response.status, estimate, host.options.now()), {
      request,
      deliveryId,
      timestamp,
      event,
      tenant,
      secret,
    });
  } catch {
    // The alarm must never change the answer.
  }
  return response;
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
  tenant?: unknown,
): WebhookResponse {
  try {
    const error = isWebhookVerificationError(cause) ? cause : unexpected(cause);
    // Unverified: the delivery id and the tenant as sent, for the report only (undefined when empty or unread).
    const context: ErrorContext = { request, deliveryId: headers?.delivery || undefined };
    if (typeof tenant === 'string' && tenant !== '') context.tenant = tenant;
    host.reportError(error, context);
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
  trace: DeliveryMessage | undefined,
  draft: DeliveryDraft | undefined,
): Maybe<WebhookResponse> {
  const queue = host.options.queue;
  // Queued mode: every verified event is queued, handlers or not here (a receiver often has none:
  // they are registered in the workers).
  if (queue !== undefined) {
    const queued = enqueue(host, queue, delivery, request, startedAt, trace);
    return (draft ? queued.then((outcome) => archived(host, draft, outcome, request)) : queued).then(answerOutcome);
  }
  const { event, deliveryId, timestamp, secret, tenant } = delivery;
  const handlers = host.handlersFor(event.type);
  // Nothing to run: acknowledge without a round trip to the store.
  if (handlers.length === 0)
    return draft ? Promise.resolve(archived(host, draft, DONE, request)).then(answerOutcome) : ok(false);
  const context: HandlerContext = { deliveryId, timestamp, request, secret };
  if (tenant !== undefined) context.tenant = tenant;
  const outcome = runOnce(host, handlers, event, context, startedAt, trace, draft);
  if (draft)
    return Promise.resolve(outcome)
      .then((done) => archived(host, draft, done, request))
      .then(answerOutcome);
  return outcome instanceof Promise ? outcome.then(answerOutcome) : answerOutcome(outcome);
}
