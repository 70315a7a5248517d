import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';

const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;
// Keep a BOM, as Buffer#toString does, so both runtimes reject the same bodies.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** Text of the body's bytes as UTF-8 (invalid sequences become U+FFFD). */
export function decodeUtf8(body: Uint8Array): string {
  if (NodeBuffer) {
    return NodeBuffer.isBuffer(body)
      ? body.toString('utf8')
      : NodeBuffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  }
  return decoder.decode(body);
}

// A key that JSON.parse would decode to "__proto__" or "constructor" is written either plainly or
// with \u escapes of ASCII letters or "_", which ordinary JSON serialisers never emit. Only bodies
// that contain one of these take the slower, cleaning parse. One alternation regex scans ~8× faster
// than two String#includes (V8 skips ahead on it), and most bodies have no "\u" at all, which a
// plain indexOf finds out before the escape regex runs: together ~0.1 ms instead of ~0.9 ms per MiB.
const SUSPICIOUS_KEY = /__proto__|constructor/;
const SUSPICIOUS_ESCAPE = /\\u00[5-7]/i;

function isSuspicious(text: string): boolean {
  return SUSPICIOUS_KEY.test(text) || (text.includes('\\u') && SUSPICIOUS_ESCAPE.test(text));
}

function dropPollutingKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') return undefined;
  if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
    return undefined;
  }
  return value;
}

/**
 * Parses JSON without letting it pollute prototypes: `__proto__` keys, and `constructor` keys that
 * hold a `prototype`, are dropped (like secure-json-parse's "remove"), so code that later merges
 * the payload into other objects cannot be turned against the app. Dropping rather than rejecting
 * keeps a delivery whose data merely contains such a key from being retried until the endpoint is
 * disabled.
 */
export function safeJsonParse(text: string): unknown {
  return isSuspicious(text) ? JSON.parse(text, dropPollutingKeys) : JSON.parse(text);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidEvent(detail: string): WebhookVerificationError {
  return new WebhookVerificationError('INVALID_EVENT', `The body is signed JSON but not an event envelope: ${detail}.`);
}

/**
 * Parses and checks the envelope of a signed body: an object with `id` (`evt_…`), string `type`,
 * integer `created`, and object `data.object`. Throws `INVALID_JSON` or `INVALID_EVENT`.
 */
export function parseEvent(body: Uint8Array): AnyEvent {
  let value: unknown;
  try {
    value = safeJsonParse(decodeUtf8(body));
  } catch (cause) {
    throw new WebhookVerificationError(
      'INVALID_JSON',
      'The signed body is not valid JSON; the service always sends a JSON event envelope.',
      { cause },
    );
  }
  if (!isPlainObject(value)) throw invalidEvent('it is not a JSON object');
  const { id, type, created, data } = value;
  if (typeof id !== 'string' || !id.startsWith('evt_') || id.length === 4) {
    throw invalidEvent('"id" must be a string "evt_<id>"');
  }
  if (typeof type !== 'string' || type === '') throw invalidEvent('"type" must be a non-empty string');
  if (typeof created !== 'number' || !Number.isInteger(created)) {
    throw invalidEvent('"created" must be an integer');
  }
  if (!isPlainObject(data) || !isPlainObject(data.object)) {
    throw invalidEvent('"data.object" must be an object');
  }
  return value as unknown as AnyEvent;
}
