/**
 * Parsing a signed body: JSON.parse's answer on every body, minus the keys that could pollute
 * prototypes, whatever words the body holds and however deep it nests.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { setWebCryptoOnly } from './crypto.js';
import { WebhookVerificationError } from './errors.js';
import {
  decodeUtf8,
  decodeUtf8Web,
  isWellFormed,
  isWellFormedFallback,
  parseEvent,
  safeJsonParse,
} from './parse-event.js';

const encode = (text: string) => new TextEncoder().encode(text);
const envelope = (object: string) =>
  `{"id":"evt_1","type":"image.created","created":1800000000,"data":{"object":${object}}}`;

/** The rule, as a JSON.parse reviver: the oracle the fast path must agree with on small bodies. */
function dropPollutingKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') return undefined;
  if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
    return undefined;
  }
  return value;
}

/** Every object and array in a parsed value, without recursion (bodies may nest 100,000 deep). */
function* nodes(value: unknown): Generator<object> {
  const stack = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    yield node;
    stack.push(...Object.values(node));
  }
}

/** What pollution would look like: an own `__proto__`, or a `constructor` holding a `prototype`. */
function pollutingKeys(value: unknown): string[] {
  const found: string[] = [];
  for (const node of nodes(value)) {
    if (Object.hasOwn(node, '__proto__')) found.push('__proto__');
    const ctor = (node as { constructor?: unknown }).constructor;
    if (Object.hasOwn(node, 'constructor') && typeof ctor === 'object' && ctor !== null) {
      if (Object.hasOwn(ctor, 'prototype')) found.push('constructor');
    }
  }
  return found;
}

/** A naive deep merge, as apps write them: the reason polluting keys are dropped. */
function naiveMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const key in source) {
    const value = source[key];
    if (typeof value === 'object' && value !== null) {
      if (typeof target[key] !== 'object' || target[key] === null) target[key] = {};
      naiveMerge(target[key] as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}

/**
 * The same JSON text, key order and own `__proto__` keys included. Not toStrictEqual: it compares
 * `.constructor`, which is the parsed value's own key where a body has a "constructor" key.
 */
const text = (value: unknown) => JSON.stringify(value);

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).code;
  }
}

const WORDS = ['__proto__', 'constructor', 'prototype', 'constructor.jpg', '"__proto__":', 'x__proto__', '\\u005f'];

/** A JSON string token for `text`: plain, or (`escapes`) with some characters written as \u escapes, either case. */
const stringToken = (text: fc.Arbitrary<string>, escapes: boolean) =>
  fc.tuple(text, escapes ? fc.integer() : fc.constant(0), fc.boolean()).map(([value, mask, upper]) =>
    [...value]
      .map((char, i) => {
        if (((mask >>> (i % 31)) & 1) === 0 || char.length > 1) return JSON.stringify(char).slice(1, -1);
        const hex = char.charCodeAt(0).toString(16).padStart(4, '0');
        return `\\u${upper ? hex.toUpperCase() : hex}`;
      })
      .reduce((out, part) => out + part, '"')
      .concat('"'),
  );

const space = fc.constantFrom('', ' ', '\n\t ', '\r\n');

/**
 * JSON text of objects whose keys are often __proto__, constructor or prototype (escaped or not
 * when `escapes`), duplicated or not, and whose values often hold these words.
 */
function jsonText(escapes: boolean): fc.Arbitrary<string> {
  const keyToken = stringToken(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 8 })), escapes);
  const leafToken = fc.oneof(
    stringToken(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 12 })), escapes),
    fc.integer().map(String),
    fc.constantFrom('true', 'false', 'null', '1.5e3'),
  );
  return fc.letrec<{ node: string; array: string; object: string; holder: string }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leafToken,
      tie('array'),
      tie('object'),
      tie('holder'),
    ),
    // What a "constructor" key must hold to be dropped.
    holder: fc
      .tuple(stringToken(fc.constant('prototype'), escapes), tie('node'))
      .map(([key, value]) => `{${key}:${value}}`),
    array: fc.array(tie('node'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    object: fc
      .array(fc.tuple(space, keyToken, space, tie('node')), { maxLength: 5 })
      .map((entries) => `{${entries.map(([a, key, b, value]) => `${a}${key}${b}:${value}`).join(',')}}`),
  })).object;
}

describe('safeJsonParse', () => {
  it.each([
    ['written plainly', false],
    ['with \\u escapes', true],
  ])('parses as JSON.parse with the dropping reviver, on any keys %s (property)', (_name, escapes) => {
    fc.assert(
      fc.property(jsonText(escapes), (body) => {
        const value = safeJsonParse(body);
        expect(text(value)).toBe(text(JSON.parse(body, dropPollutingKeys)));
        expect(pollutingKeys(value)).toEqual([]);
        const target: Record<string, unknown> = {};
        naiveMerge(target, value as Record<string, unknown>);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(Object.keys(Object.prototype)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('bodies without such keys parse exactly as JSON.parse, whatever words their values hold', () => {
    for (const body of [
      '{"file":"constructor.jpg","note":"__proto__","tags":["constructor","prototype"]}',
      '{"a":"\\"__proto__\\": {}","b":"\\u005f_proto__"}',
      '[{"x":"constructor"},"__proto__",1]',
      '"__proto__"',
      '{"constructor":"a string"}',
      '{"constructor":{"name":"no prototype"},"prototype":{}}',
    ]) {
      expect(text(safeJsonParse(body))).toBe(text(JSON.parse(body)));
    }
  });

  it('drops __proto__ keys and constructor keys holding a prototype, plain or escaped, at any depth', () => {
    expect(text(safeJsonParse('{"__proto__":{"polluted":1},"x":1}'))).toBe('{"x":1}');
    expect(text(safeJsonParse('{"a":[{"\\u005f_proto__":{"polluted":1},"y":2}]}'))).toBe('{"a":[{"y":2}]}');
    expect(text(safeJsonParse('{"constructor":{"prototype":{"polluted":1}},"x":1}'))).toBe('{"x":1}');
    expect(text(safeJsonParse('{"b":{"\\u0063onstructor" :{"prototype":null}}}'))).toBe('{"b":{}}');
    expect(text(safeJsonParse('{"x":"__proto__","__proto__" \r\n\t:{"polluted":1}}'))).toBe('{"x":"__proto__"}');
    const merged: Record<string, unknown> = {};
    naiveMerge(merged, safeJsonParse('{"__proto__":{"polluted":1}}') as Record<string, unknown>);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects what JSON.parse rejects, a leading byte order mark included', () => {
    for (const body of ['', 'not json', '{"a":1,}', '\uFEFF{"a":1}', '{"a":1}\uFEFF']) {
      expect(() => JSON.parse(body)).toThrow(SyntaxError);
      expect(() => safeJsonParse(body)).toThrow(SyntaxError);
    }
  });

  it.each([
    ['a value "constructor.jpg"', '{"b":"constructor.jpg"}', { b: 'constructor.jpg' }],
    ['a __proto__ key', '{"__proto__":{"polluted":1},"b":1}', { b: 1 }],
    ['a constructor key holding a prototype', '{"constructor":{"prototype":{}},"b":1}', { b: 1 }],
  ])('a body nested 100,000 levels deep with %s parses as one without it would', (_name, inner, leaf) => {
    const depth = 100_000;
    const body = `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
    let node = safeJsonParse(body) as { a?: unknown };
    for (let i = 0; i < depth; i++) node = node.a as { a?: unknown };
    expect(text(node)).toBe(text(leaf));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('parseEvent', () => {
  it('a deeply nested data.object with a __proto__ key is an event, not INVALID_JSON', () => {
    const depth = 100_000;
    const object = `${'{"a":'.repeat(depth)}{"__proto__":{"polluted":1},"file":"constructor.jpg"}${'}'.repeat(depth)}`;
    const event = parseEvent(encode(envelope(object)));
    let node = event.data.object as { a?: unknown };
    for (let i = 0; i < depth; i++) node = node.a as { a?: unknown };
    expect(text(node)).toBe('{"file":"constructor.jpg"}');
  });

  it('a body starting with a byte order mark is INVALID_JSON', () => {
    expect(codeOf(() => parseEvent(encode(`\uFEFF${envelope('{}')}`)))).toBe('INVALID_JSON');
    expect(parseEvent(encode(envelope('{}'))).id).toBe('evt_1');
  });
});

/** The text of `bytes` when they are UTF-8, decided by round trip: replacement characters do not re-encode to the bytes they replaced. */
function utf8Oracle(bytes: Uint8Array): string | undefined {
  const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
  return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined;
}

/** Valid UTF-8 with up to three arbitrary bytes spliced in somewhere. */
const mostlyUtf8 = fc
  .tuple(fc.string({ unit: 'binary', maxLength: 24 }), fc.nat(), fc.uint8Array({ minLength: 0, maxLength: 3 }))
  .map(([text, at, junk]) => {
    const bytes = encode(text);
    const i = at % (bytes.length + 1);
    return new Uint8Array([...bytes.subarray(0, i), ...junk, ...bytes.subarray(i)]);
  });

const NOT_UTF8: [string, number[]][] = [
  ['a lone continuation byte', [0x80]],
  ['0xFF', [0xff]],
  ['an overlong "/" (C0 AF)', [0xc0, 0xaf]],
  ['an overlong NUL (E0 80 80)', [0xe0, 0x80, 0x80]],
  ['an encoded high surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
  ['an encoded low surrogate (ED B0 80)', [0xed, 0xb0, 0x80]],
  ['a code point past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
  ['a truncated sequence (E2 82)', [0xe2, 0x82]],
];

describe('decodeUtf8 (node:buffer) and decodeUtf8Web (TextDecoder)', () => {
  afterEach(() => setWebCryptoOnly(false));

  it('agree with each other and with a round-trip oracle on any bytes (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 48 }), mostlyUtf8), (bytes) => {
        const expected = utf8Oracle(bytes);
        expect(decodeUtf8(bytes)).toBe(expected);
        expect(decodeUtf8(Buffer.from(bytes))).toBe(expected);
        expect(decodeUtf8Web(bytes)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it.each(NOT_UTF8)('refuse %s, on both runtimes', (_name, junk) => {
    const bytes = new Uint8Array([0x7b, ...junk, 0x7d]);
    expect(decodeUtf8(bytes)).toBeUndefined();
    expect(decodeUtf8Web(bytes)).toBeUndefined();
    expect(codeOf(() => parseEvent(bytes))).toBe('INVALID_JSON');
    setWebCryptoOnly(true);
    expect(codeOf(() => parseEvent(bytes))).toBe('INVALID_JSON');
  });

  it('keep a BOM, read only the view of a larger buffer, and decode text in any script', () => {
    const text = '\uFEFF{"a":"café 日本 🙂 \uFFFD"}';
    const framed = new Uint8Array([0xff, ...encode(text), 0xff]).subarray(1, -1);
    for (const decode of [decodeUtf8, decodeUtf8Web]) {
      expect(decode(framed)).toBe(text);
      expect(decode(new Uint8Array(0))).toBe('');
    }
  });
});

describe('ids that are not well-formed text', () => {
  const codeUnits = fc
    .array(fc.oneof(fc.integer({ min: 0xd800, max: 0xdfff }), fc.integer({ min: 0, max: 0xffff })), { maxLength: 12 })
    .map((units) => String.fromCharCode(...units));

  it('the fallback agrees with String.prototype.isWellFormed (property)', () => {
    fc.assert(
      fc.property(codeUnits, (text) => {
        expect(isWellFormedFallback(text)).toBe(isWellFormed(text));
        expect(isWellFormed(text)).toBe(new TextDecoder().decode(new TextEncoder().encode(text)) === text);
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['a high surrogate at the end', 'evt_\\ud800'],
    ['a low surrogate alone', 'evt_a\\udc00b'],
    ['a pair in the wrong order', 'evt_\\ude00\\ud83d'],
  ])('an id with %s is INVALID_EVENT', (_name, id) => {
    expect(
      codeOf(() => parseEvent(encode(`{"id":"${id}","type":"image.created","created":1,"data":{"object":{}}}`))),
    ).toBe('INVALID_EVENT');
  });

  it('an id with a surrogate pair, escaped or not, is an event', () => {
    for (const id of ['evt_\\ud83d\\ude00', 'evt_🙂']) {
      const event = parseEvent(encode(`{"id":"${id}","type":"image.created","created":1,"data":{"object":{}}}`));
      expect(event.id).toBe(JSON.parse(`"${id}"`));
    }
  });
});
