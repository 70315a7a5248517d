import type { AnyHandler, ErrorContext } from './context.js';
import { toBytes } from './crypto.js';
import { isWebhookVerificationError, payloadTooLarge, WebhookVerificationError } from './errors.js';
import { getHeader, HEADER, type HeadersInput } from './headers.js';
import type { ResolvedOptions } from './options.js';
import { type Outcome, runOnce } from './run-once.js';
import { type VerifiedDelivery, verifyDeliveryAnywhere } from './verify.js';

/**
 * Reads a request body with a byte limit and a deadline, for adapters. Throw a
 * `WebhookVerificationError` (`PAYLOAD_TOO_LARGE`, `BODY_TIMEOUT` from `bodyTimeout(ms)`,
 * `RAW_BODY_UNAVAILABLE`) to answer with it; any other error answers 400 `BODY_UNREADABLE`, except
 * one whose `status` or `statusCode` is 413 (raw-body's, Fastify's, or the reader's own), which
 * answers `PAYLOAD_TOO_LARGE`. A reader may also stop as soon as it has more than `limit` bytes and
 * return those: the pipeline answers 413 for any longer body. When `timeoutMs` is a number, the
 * reader must give up once the body has not fully arrived that many milliseconds after it started,
 * holding nothing more, and stop the stream by then at the latest.
 */
export type BodyReader = (limit: number, timeoutMs: number | undefined) => Promise<Uint8Array | string>;

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

/** What the pipeline needs from a `Webhooks`: its options, the handlers of a type, where to report. */
export interface PipelineHost {
  readonly options: ResolvedOptions;
  handlersFor(type: string): readonly AnyHandler[];
  reportError(error: WebhookVerificationError, context: ErrorContext): void;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const EMPTY = new Uint8Array(0);
const DIGITS = /^[0-9]+$/;
const NO_HEADERS: HeadersInput = {};
/** 413s answered from Content-Length alone, before a byte of the body was read. */
const UNREAD = new WeakSet<WebhookVerificationError>();

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
  // The rest of a body that came too slowly may never come, and one refused by its Content-Length
  // was never read: do not wait for either on this connection.
  if (error.code === 'BODY_TIMEOUT' || UNREAD.has(error)) headers.connection = 'close';
  return { status: error.status, headers, body: JSON.stringify(error.toJSON()) };
}

function answerOutcome(outcome: Outcome): WebhookResponse {
  return outcome.kind === 'done' ? ok(outcome.duplicate) : answer(outcome.error);
}

/** The raw body as given, or a `RAW_BODY_UNAVAILABLE` error saying what was passed instead. */
export function rawBytes(body: unknown, where: string): Uint8Array {
  if (body instanceof Uint8Array || typeof body === 'string') return toBytes(body);
  if (body === undefined) return EMPTY;
  const got =
    body === null
      ? 'null'
      : typeof body === 'object'
        ? `${(body as object).constructor?.name === 'Object' ? 'a parsed object' : `an instance of ${(body as object).constructor?.name ?? 'Object'}`}`
        : `a ${typeof body}`;
  throw new WebhookVerificationError(
    'RAW_BODY_UNAVAILABLE',
    `${where} needs the raw body as received (a Buffer, Uint8Array or string), got ${got}. A JSON body parser probably ran first: verify the bytes it read (express.raw(), or express.json({ verify: (req, res, buf) => { req.rawBody = buf } })), never re-serialised JSON.`,
  );
}

/** Headers as given when they can be read; anything else reads as no headers (400, never a crash). */
export function headersOf(headers: unknown): HeadersInput {
  return typeof headers === 'object' && headers !== null ? (headers as HeadersInput) : NO_HEADERS;
}

async function readBody(reader: BodyReader, limit: number, timeoutMs: number | undefined) {
  try {
    return await reader(limit, timeoutMs);
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
async function admit(options: ResolvedOptions, input: HandleInput, headers: HeadersInput): Promise<VerifiedDelivery> {
  if (input.method !== undefined && input.method !== 'POST') {
    throw new WebhookVerificationError(
      'METHOD_NOT_ALLOWED',
      `Webhook deliveries are POST requests; ${String(input.method).slice(0, 20)} is not allowed here.`,
    );
  }
  const limit = options.maxBodyBytes;
  const declared = getHeader(headers, 'content-length');
  // Refuse a declared oversize body before reading a byte of it.
  if (declared !== undefined && DIGITS.test(declared) && Number(declared) > limit) {
    const error = payloadTooLarge(limit);
    UNREAD.add(error);
    throw error;
  }
  const raw = typeof input.body === 'function' ? await readBody(input.body, limit, options.bodyTimeoutMs) : input.body;
  const body = rawBytes(raw, 'webhooks.handle()');
  if (body.byteLength > limit) throw payloadTooLarge(limit);
  return verifyDeliveryAnywhere(options, body, headers);
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
      (delivery) => dispatch(host, delivery, request),
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

/** Store and handlers, for a verified delivery. */
async function dispatch(host: PipelineHost, delivery: VerifiedDelivery, request: unknown): Promise<WebhookResponse> {
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
