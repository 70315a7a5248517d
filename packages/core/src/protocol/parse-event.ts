import type * as NodeBuffer from 'node:buffer';
import secureJsonParse from 'secure-json-parse';
import { isWebCryptoOnly } from './crypto.js';
import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';

/**
 * `node:buffer` when the runtime has it, looked up as crypto.ts looks up `node:crypto`: no static
 * import, so core still bundles for Workers and browsers, which decode with TextDecoder instead.
 */
const nodeBuffer = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:buffer') as typeof NodeBuffer | undefined;

// fatal: bytes that are not UTF-8 throw rather than become U+FFFD, which would give two different
// ids one string. ignoreBOM: keep a BOM, as Buffer#toString does, so JSON.parse rejects it everywhere.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body's text, or undefined when its bytes are not UTF-8: TextDecoder, as on Workers and browsers. */
export function decodeUtf8Web(body: Uint8Array): string | undefined {
  try {
    return decoder.decode(body);
  } catch {
    return undefined;
  }
}

/**
 * The body's text, or undefined when its bytes are not UTF-8 (RFC 3629: no overlong forms, no
 * encoded surrogates, nothing past U+10FFFF). On Node, `isUtf8` then `Buffer#toString` (several
 * times faster than a fatal TextDecoder there); elsewhere `decodeUtf8Web`, with the same answers.
 */
export function decodeUtf8(body: Uint8Array): string | undefined {
  if (!nodeBuffer || isWebCryptoOnly()) return decodeUtf8Web(body);
  const { Buffer, isUtf8 } = nodeBuffer;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined;
}

// A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `String.prototype.isWellFormed` where a runtime lacks it (it is ES2024): no lone surrogate. */
export function isWellFormedFallback(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/**
 * True when `text` holds no lone surrogate, so it has one UTF-8 form and no other string shares it:
 * `String.prototype.isWellFormed` (Node 20, current browsers and Workers), else the same by regex.
 */
export const isWellFormed: (text: string) => boolean = nativeIsWellFormed
  ? (text) => nativeIsWellFormed.call(text)
  : isWellFormedFallback;

const QUOTE = 0x22;
const COLON = 0x3a;

/** JSON's white space: space, tab, line feed, carriage return. */
function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** True where `text[at]` is `"`, then JSON white space, then `:`: the end of an object key. */
function endsKey(text: string, at: number): boolean {
  if (text.charCodeAt(at) !== QUOTE) return false;
  let i = at + 1;
  while (isJsonSpace(text.charCodeAt(i))) i++;
  return text.charCodeAt(i) === COLON;
}

/**
 * True where `word` stands in `text` as a whole key written plainly: `"word"`, white space, `:`.
 * The search takes the closing quote in, so "constructor.jpg" or "the constructor of" in a value
 * are skipped by indexOf itself; only a value that is exactly the word costs one more look.
 */
function hasPlainKey(text: string, word: string): boolean {
  const closed = `${word}"`;
  for (let at = text.indexOf(closed); at !== -1; at = text.indexOf(closed, at + closed.length)) {
    if (text.charCodeAt(at - 1) === QUOTE && endsKey(text, at + word.length)) return true;
  }
  return false;
}

// Every letter of "__proto__" and "constructor" is U+005F to U+0075, so a key that spells one with
// any \u escape holds one of these. Ordinary serialisers escape only control and non-ASCII code units.
const ASCII_LETTER_ESCAPE = /\\u00[5-7]/i;

/**
 * False only where no key of the valid JSON `text` can be `__proto__` or `constructor`. A value
 * such as "constructor.jpg" is not a key: it is followed by `.`, or by `"` and then `,`, `]` or `}`.
 * A few strings that hold both words' quotes (`"a\"constructor": 1`) say true; nothing else does.
 * Both keys that pollute spell "proto" (`__proto__`, and a `constructor` holding a `prototype`,
 * the only one secure-json-parse removes), so one scan for it (~0.2 ms per MiB) rules out nearly
 * every body; the two key scans (~0.4 ms per MiB each, a regex over every `"` ~1 ms) run only when
 * the text says "proto" somewhere.
 */
function mayHoldPollutingKey(text: string): boolean {
  if (text.includes('\\u') && ASCII_LETTER_ESCAPE.test(text)) return true;
  if (!text.includes('proto')) return false;
  return hasPlainKey(text, '__proto__') || hasPlainKey(text, 'constructor');
}

const DROP_POLLUTING_KEYS = { protoAction: 'remove', constructorAction: 'remove' } as const;

/**
 * `JSON.parse` that cannot pollute prototypes: `__proto__` keys, and `constructor` keys that hold
 * a `prototype`, are dropped, so code that later merges the payload into other objects cannot be
 * turned against the app. Dropped rather than rejected, so a delivery whose data merely holds such
 * a key is not retried until the endpoint is disabled. Every body is parsed by `JSON.parse` alone,
 * so it succeeds and fails where `JSON.parse` does (a leading byte order mark is an error), at
 * JSON.parse's cost whatever words the values hold; only a body with such a key is then walked
 * once by secure-json-parse's `scan` (iterative: no depth limit beyond JSON.parse's own).
 */
export function safeJsonParse(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || !mayHoldPollutingKey(text)) return value;
  return secureJsonParse.scan(value, DROP_POLLUTING_KEYS);
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
  const text = decodeUtf8(body);
  if (text === undefined) {
    throw new WebhookVerificationError(
      'INVALID_JSON',
      'The signed body is not valid JSON: its bytes are not UTF-8 (RFC 8259, section 8.1); the service always sends a UTF-8 JSON event envelope.',
    );
  }
  let value: unknown;
  try {
    value = safeJsonParse(text);
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
  // A lone surrogate (a \ud800 escape without its pair) has no UTF-8 form: stores that encode ids
  // would file different ids under one key, and answer a new event as a duplicate.
  if (!isWellFormed(id)) throw invalidEvent('"id" holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)');
  if (typeof type !== 'string' || type === '') throw invalidEvent('"type" must be a non-empty string');
  if (typeof created !== 'number' || !Number.isInteger(created)) {
    throw invalidEvent('"created" must be an integer');
  }
  if (!isPlainObject(data) || !isPlainObject(data.object)) {
    throw invalidEvent('"data.object" must be an object');
  }
  return value as unknown as AnyEvent;
}
