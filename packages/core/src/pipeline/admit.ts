import { toBytes } from '../protocol/crypto.js';
import { isWebhookVerificationError, payloadTooLarge, WebhookVerificationError } from '../protocol/errors.js';
import type { DeliveryHeaders, HeadersInput } from '../protocol/headers.js';
import { verifyForTenant } from '../protocol/secret-lookup.js';
import { type VerifiedDelivery, verifyDeliveryAnywhere } from '../protocol/verify.js';
import type { HandleInput } from '../seams/handle-input.js';
import type { Maybe } from '../util/maybe.js';
import type { ResolvedOptions } from './options.js';

const EMPTY = new Uint8Array(0);
const DIGITS = /^[0-9]+$/;
const NO_HEADERS: HeadersInput = {};
/** 413s refused from Content-Length alone, before a byte of the body was read. */
const UNREAD = new WeakSet<WebhookVerificationError>();

/** True for a 413 refused from Content-Length alone: the body was never read from the connection. */
export function refusedUnread(error: WebhookVerificationError): boolean {
  return UNREAD.has(error);
}

/**
 * The raw body as given, or a `RAW_BODY_UNAVAILABLE` error saying what was passed instead.
 * `undefined` is an empty body for `handle()` (a request without one) but not for `verify()`, where
 * it means the raw copy was never kept (`req.rawBody` without a `verify` hook): `missing` says which.
 */
export function rawBytes(body: unknown, where: string, missing: 'empty' | 'unavailable' = 'empty'): Uint8Array {
  if (body instanceof Uint8Array || typeof body === 'string') return toBytes(body);
  if (body === undefined && missing === 'empty') return EMPTY;
  const got =
    body === null || body === undefined
      ? String(body)
      : typeof body === 'object'
        ? describeObject(body)
        : `a ${typeof body}`;
  throw new WebhookVerificationError(
    'RAW_BODY_UNAVAILABLE',
    `${where} needs the raw body as received (a Buffer, Uint8Array or string), got ${got}. A JSON body parser probably ran first: verify the bytes it read (express.raw(), or express.json({ verify: (req, res, buf) => { req.rawBody = buf } })), never re-serialised JSON.`,
  );
}

function describeObject(body: object): string {
  const name = (body as { constructor?: { name?: unknown } }).constructor?.name;
  if (name === 'Object' || name === undefined) return 'a parsed object';
  return `an instance of ${typeof name === 'string' && name !== '' ? name.slice(0, 40) : 'an unnamed class'}`;
}

/** Headers as given when they can be read; anything else reads as no headers (400, never a crash). */
export function headersOf(headers: unknown): HeadersInput {
  return typeof headers === 'object' && headers !== null ? (headers as HeadersInput) : NO_HEADERS;
}

/** What a failed body reader's error means: its own `WebhookVerificationError`, a 413, or `BODY_UNREADABLE`. */
export function readFailure(cause: unknown, limit: number): WebhookVerificationError {
  if (cause instanceof WebhookVerificationError) return cause;
  // One from another copy of core may lack toJSON/status: answer it with this copy's class.
  if (isWebhookVerificationError(cause)) {
    return new WebhookVerificationError(cause.code, String(cause.message ?? ''), { cause });
  }
  // A framework's own body reader (Fastify, raw-body, body-parser) says "too large" with a 413.
  const { status, statusCode } = (cause ?? {}) as { status?: unknown; statusCode?: unknown };
  if (status === 413 || statusCode === 413) return payloadTooLarge(limit);
  return new WebhookVerificationError(
    'BODY_UNREADABLE',
    'The request body could not be read completely (the client aborted, or the body did not match its Content-Length).',
    { cause },
  );
}

/** A method other than POST answers 405 (an omitted one is taken as POST). */
export function checkMethod(method: unknown): void {
  if (method !== undefined && method !== 'POST') {
    throw new WebhookVerificationError(
      'METHOD_NOT_ALLOWED',
      `Webhook deliveries are POST requests; ${String(method).slice(0, 20)} is not allowed here.`,
    );
  }
}

/**
 * The declared size, then the body: the raw body as given or as its reader returned it, or the
 * reader's promise of it. Throws the `WebhookVerificationError` that answers the request; a
 * reader's failure (thrown here, or the promise's rejection) means what `readFailure` says.
 */
export function receive(options: ResolvedOptions, input: HandleInput, headers: DeliveryHeaders): unknown {
  const limit = options.maxBodyBytes;
  const declared = headers.contentLength;
  // Refuse a declared oversize body before reading a byte of it.
  if (declared !== undefined && DIGITS.test(declared) && Number(declared) > limit) {
    const error = payloadTooLarge(limit);
    UNREAD.add(error);
    throw error;
  }
  const { body } = input;
  if (typeof body !== 'function') return body;
  try {
    return body(limit, options.bodyTimeoutMs);
  } catch (cause) {
    throw readFailure(cause, limit);
  }
}

/**
 * The size check and verification of a body that has arrived: every answer decided before the
 * store and the handlers. At once on `node:crypto`; a promise on Web Crypto, or while a tenant's
 * secrets are looked up (`tenant`: what the adapter passed, used only with a `secret` function).
 */
export function admitBody(
  options: ResolvedOptions,
  raw: unknown,
  headers: DeliveryHeaders,
  tenant?: unknown,
): Maybe<VerifiedDelivery> {
  const body = rawBytes(raw, 'webhooks.handle()');
  if (body.byteLength > options.maxBodyBytes) throw payloadTooLarge(options.maxBodyBytes);
  const tenants = options.tenantSecrets;
  return tenants === undefined
    ? verifyDeliveryAnywhere(options, body, headers)
    : verifyForTenant(options, tenants, body, headers, tenant);
}
