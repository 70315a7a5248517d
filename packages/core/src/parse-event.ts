import secureJsonParse from 'secure-json-parse';
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
 * Two indexOf scans: ~0.1 ms per MiB, where a regex over every `"` costs ~1 ms.
 */
function mayHoldPollutingKey(text: string): boolean {
  return (
    hasPlainKey(text, '__proto__') ||
    hasPlainKey(text, 'constructor') ||
    (text.includes('\\u') && ASCII_LETTER_ESCAPE.test(text))
  );
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
