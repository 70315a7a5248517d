import { toBytes } from './crypto.js';
import { isWebhookVerificationError, payloadTooLarge, WebhookVerificationError } from './errors.js';
import { getHeader, type HeadersInput } from './headers.js';
import type { ClaimResult } from './store.js';
import { type VerifiedDelivery, verifyDeliveryAnywhere } from './verify.js';
import type { ErrorContext, HandlerContext, Webhooks } from './webhooks.js';

/**
 * Reads a request body with a byte limit, for adapters. Throw a `WebhookVerificationError`
 * (`PAYLOAD_TOO_LARGE`, `RAW_BODY_UNAVAILABLE`) to answer with it; any other error answers
 * 400 `BODY_UNREADABLE`, except one whose `status` or `statusCode` is 413 (raw-body's, Fastify's,
 * or the reader's own), which answers `PAYLOAD_TOO_LARGE`. A reader may also stop as soon as it
 * has more than `limit` bytes and return those: the pipeline answers 413 for any longer body.
 */
export type BodyReader = (limit: number) => Promise<Uint8Array | string>;

/** One request, as an adapter hands it to `webhooks.handle()`. */
export interface HandleInput<TRequest = unknown> {
  /** The HTTP method; anything but `POST` answers 405. Omitted: taken as `POST`. */
  method?: string | undefined;
  /** Node's lower-case header object, or a `Headers`. */
  headers: HeadersInput;
  /** The raw body (a string is taken as UTF-8), or a reader that fetches it within the limit. */
  body?: Uint8Array | string | BodyReader | undefined;
  /** Passed to handlers as `context.request`. */
  request?: TRequest;
}

/** The answer for an adapter to send, exactly as it is. */
export interface WebhookResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const EMPTY = new Uint8Array(0);
const DIGITS = /^[0-9]+$/;

function ok(duplicate: boolean): WebhookResponse {
  return {
    status: 200,
    headers: { 'content-type': JSON_TYPE },
    body: duplicate ? '{"received":true,"duplicate":true}' : '{"received":true}',
  };
}

function answer(error: WebhookVerificationError): WebhookResponse {
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  if (error.code === 'METHOD_NOT_ALLOWED') headers.allow = 'POST';
  return { status: error.status, headers, body: JSON.stringify(error.toJSON()) };
}

async function readBody(reader: BodyReader, limit: number): Promise<Uint8Array | string> {
  try {
    return await reader(limit);
  } catch (cause) {
    if (cause instanceof WebhookVerificationError) throw cause;
    // One from another copy of core may lack toJSON/status: answer it with this copy's class.
    if (isWebhookVerificationError(cause)) {
      throw new WebhookVerificationError(cause.code, String(cause.message ?? ''), { cause });
    }
    // A framework's own body reader (Fastify, raw-body, body-parser) says "too large" with a 413.
    const { status, statusCode } = (cause ?? {}) as { status?: unknown; statusCode?: unknown };
    if (status === 413 || statusCode === 413) throw payloadTooLarge(limit);
    throw new WebhookVerificationError(
      'BODY_UNREADABLE',
      'The request body could not be read completely (the client aborted, or the body did not match its Content-Length).',
      { cause },
    );
  }
}

/** Method, size and verification: every answer decided before the store and the handlers. */
async function admit(webhooks: Webhooks, input: HandleInput): Promise<VerifiedDelivery> {
  if (input.method !== undefined && input.method !== 'POST') {
    throw new WebhookVerificationError(
      'METHOD_NOT_ALLOWED',
      `Webhook deliveries are POST requests; ${input.method} is not allowed here.`,
    );
  }
  const limit = webhooks.options.maxBodyBytes;
  const declared = getHeader(input.headers as HeadersInput, 'content-length');
  // Refuse a declared oversize body before reading a byte of it.
  if (declared !== undefined && DIGITS.test(declared) && Number(declared) > limit) throw payloadTooLarge(limit);
  const raw = typeof input.body === 'function' ? await readBody(input.body, limit) : input.body;
  const body = raw === undefined ? EMPTY : toBytes(raw);
  if (body.byteLength > limit) throw payloadTooLarge(limit);
  return verifyDeliveryAnywhere(webhooks.options, body, input.headers);
}

function reject(webhooks: Webhooks, error: WebhookVerificationError, context: ErrorContext): WebhookResponse {
  webhooks.reportError(error, context);
  return answer(error);
}

/** The whole request pipeline behind `webhooks.handle()`. */
export function runPipeline(webhooks: Webhooks, input: HandleInput): Promise<WebhookResponse> {
  // Not async, and the callbacks capture only the request: nothing holds `input` (and a body
  // passed in it) once it is admitted, so the raw bytes can be freed while handlers run.
  const { request } = input;
  return admit(webhooks, input).then(
    (delivery) => dispatch(webhooks, delivery, request),
    (error: unknown) => {
      if (!isWebhookVerificationError(error)) throw error;
      return reject(webhooks, error, { request });
    },
  );
}

/** Store and handlers, for a verified delivery. */
async function dispatch(webhooks: Webhooks, delivery: VerifiedDelivery, request: unknown): Promise<WebhookResponse> {
  const { event, deliveryId, timestamp } = delivery;
  const handlers = webhooks.handlersFor(event.type);
  // Nothing to run: acknowledge without a round trip to the store.
  if (handlers.length === 0) return ok(false);

  const errorContext: ErrorContext = { request, deliveryId, timestamp, event };
  const store = webhooks.options.store;
  if (store) {
    let claim: ClaimResult;
    try {
      claim = await store.claim(event.id);
      if (claim !== 'claimed' && claim !== 'in-flight' && claim !== 'completed') {
        throw new TypeError(`store.claim() answered ${JSON.stringify(claim)}, not claimed/in-flight/completed`);
      }
    } catch (cause) {
      return reject(
        webhooks,
        new WebhookVerificationError(
          'STORE_UNAVAILABLE',
          'The idempotency store is unavailable, so the event was not processed; the service will retry it.',
          { cause },
        ),
        errorContext,
      );
    }
    if (claim === 'completed') return ok(true);
    if (claim === 'in-flight') {
      return reject(
        webhooks,
        new WebhookVerificationError(
          'IN_FLIGHT',
          'This event is still being processed by an earlier delivery; it was not run again.',
        ),
        errorContext,
      );
    }
  }

  const context: HandlerContext = { deliveryId, timestamp, request };
  try {
    for (const handler of handlers) await handler(event, context);
  } catch (cause) {
    if (store) {
      try {
        await store.release(event.id);
      } catch (releaseCause) {
        webhooks.reportError(
          new WebhookVerificationError(
            'STORE_UNAVAILABLE',
            `The store could not release event ${event.id} after a handler failed; retries answer 409 until its claim expires.`,
            { cause: releaseCause },
          ),
          errorContext,
        );
      }
    }
    // The body must not repeat the handler's message: it may hold internal details.
    return reject(
      webhooks,
      new WebhookVerificationError(
        'HANDLER_FAILED',
        `A handler for ${event.type} failed; the event was not marked processed, so the service's retry will run it again.`,
        { cause },
      ),
      errorContext,
    );
  }

  if (store) {
    try {
      await store.complete(event.id);
    } catch (cause) {
      // The work is done: answering an error would only make the service send it again.
      webhooks.reportError(
        new WebhookVerificationError(
          'STORE_UNAVAILABLE',
          `Handlers for event ${event.id} succeeded but the store could not record it; a redelivery may run them again.`,
          { cause },
        ),
        errorContext,
      );
    }
  }
  return ok(false);
}
