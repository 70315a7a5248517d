import { toBytes } from './crypto.js';
import { isWebhookVerificationError, payloadTooLarge, WebhookVerificationError } from './errors.js';
import type { BodyReader, HandleInput } from './handle-input.js';
import { getHeader, type HeadersInput } from './headers.js';
import type { ResolvedOptions } from './options.js';
import { type VerifiedDelivery, verifyDeliveryAnywhere } from './verify.js';

const EMPTY = new Uint8Array(0);
const DIGITS = /^[0-9]+$/;
const NO_HEADERS: HeadersInput = {};
/** 413s refused from Content-Length alone, before a byte of the body was read. */
const UNREAD = new WeakSet<WebhookVerificationError>();

/** True for a 413 refused from Content-Length alone: the body was never read from the connection. */
export function refusedUnread(error: WebhookVerificationError): boolean {
  return UNREAD.has(error);
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
export async function admit(
  options: ResolvedOptions,
  input: HandleInput,
  headers: HeadersInput,
): Promise<VerifiedDelivery> {
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
