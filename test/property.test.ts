/**
 * Property tests (fast-check) for the hostile input of verification: headers and bodies.
 */
import { createHmac } from 'node:crypto';
import { EVENT_TYPES, isWebhookVerificationError, sign, Webhooks, WebhookVerificationError } from '@pixhook/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const SECRET = 'whsec_property_5a6b7c8d';
const NOW = 1_800_000_000;
const RUNS = { numRuns: 300 };

const hexDigit = fc.constantFrom(...'0123456789abcdef');
const hex64 = fc.string({ unit: hexDigit, minLength: 64, maxLength: 64 });
const digits = fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 12 });
/** A usable signing secret: non-empty, no surrounding white space. */
const secretArb = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() === s && s !== '');
/** A key of data.object that round-trips through pixhook's JSON parsing unchanged. */
const keyArb = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((k) => k !== '__proto__' && k !== 'constructor');
/** Values that mention the words of prototype pollution parse like any other. */
const wordyValueArb = fc.constantFrom('constructor', '__proto__', 'constructor.jpg', '"__proto__": {}', 'prototype');
const objectArb = fc.dictionary(keyArb, fc.oneof(fc.jsonValue({ maxDepth: 3 }), wordyValueArb), { maxKeys: 6 });
const typeArb = fc.oneof(
  fc.constantFrom(...EVENT_TYPES),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).filter((t) => t.trim() !== ''),
);
const envelopeArb = fc
  .record({
    id: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map((s) => `evt_${s}`),
    type: typeArb,
    created: fc.integer(),
    data: fc.record({ object: objectArb }),
  })
  // pixhook drops prototype-polluting keys on purpose; leave them to the unit tests (parse-event.test.ts).
  .filter((e) => !/"(?:__proto__|constructor)":/.test(JSON.stringify(e)));

/** Header values as an attacker might send them: random text, or near-valid signature headers. */
const signatureHeaderArb = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
  fc
    .array(
      fc.oneof(
        fc.tuple(
          fc.constantFrom('t', 'v1', 'v0', 'T', 'V1', ' t', ''),
          fc.oneof(digits, hex64, fc.string({ maxLength: 20 })),
        ),
        fc.tuple(
          fc.constant('t'),
          fc.oneof(digits, fc.constant(String(NOW)), fc.constantFrom('1.5', '+1', '1e9', '-1')),
        ),
        fc.tuple(fc.constant('v1'), hex64),
      ),
      { maxLength: 6 },
    )
    .chain((parts) =>
      fc
        .array(fc.constantFrom(',', ', ', ',,', ';', ' '), { minLength: parts.length, maxLength: parts.length })
        .map((seps) => parts.map(([k, v], i) => `${i === 0 ? '' : seps[i]}${k}=${v}`).join('')),
    ),
);

const bodyArb = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.string({ maxLength: 300 }),
  envelopeArb.map((e) => JSON.stringify(e)),
);

const optionalHeader = (value: fc.Arbitrary<string>) => fc.option(value, { nil: undefined });

function make(options: { tolerance?: number | false; secret?: string | string[] } = {}) {
  return new Webhooks({ secret: options.secret ?? SECRET, now: () => NOW * 1000, tolerance: options.tolerance ?? 300 });
}

function verifyError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('property: hostile input', () => {
  it('random headers and bodies never yield an event and throw only WebhookVerificationError', () => {
    const lenient = make({ tolerance: false });
    const strict = make();
    // Either everything random, or a well-formed envelope whose unsigned headers agree with it.
    const requestArb = fc.oneof(
      fc.record({
        body: bodyArb,
        event: optionalHeader(fc.oneof(typeArb, fc.string({ maxLength: 20 }))),
        delivery: optionalHeader(fc.string({ maxLength: 40 })),
      }),
      envelopeArb.map((e) => ({ body: JSON.stringify(e), event: e.type, delivery: 'dlv_1' })),
    );
    fc.assert(
      fc.property(requestArb, optionalHeader(signatureHeaderArb), fc.boolean(), (request, signature, useStrict) => {
        const headers = {
          'x-service-signature': signature,
          'x-service-event': request.event,
          'x-service-delivery': request.delivery,
        };
        const error = verifyError(() => (useStrict ? strict : lenient).verify(request.body, headers));
        expect(error).toBeInstanceOf(WebhookVerificationError);
        expect(isWebhookVerificationError(error)).toBe(true);
        expect((error as WebhookVerificationError).status).toBe(400);
      }),
      RUNS,
    );
  });

  it('a body signed with any other secret never verifies, however the header is formatted', () => {
    const webhooks = make();
    fc.assert(
      fc.property(envelopeArb, secretArb, fc.integer({ min: -300, max: 300 }), (event, other, skew) => {
        fc.pre(other !== SECRET);
        const body = JSON.stringify(event);
        const headers = {
          'x-service-signature': sign(other, body, NOW + skew),
          'x-service-event': event.type,
          'x-service-delivery': 'dlv_1',
        };
        const error = verifyError(() => webhooks.verify(body, headers));
        expect((error as WebhookVerificationError)?.code).toBe('SIGNATURE_MISMATCH');
      }),
      RUNS,
    );
  });
  it('a v1 with any character that is not an ASCII hex digit never matches, whatever its low byte', () => {
    const webhooks = make();
    fc.assert(
      fc.property(envelopeArb, fc.nat({ max: 63 }), fc.integer({ min: 1, max: 0xff }), (event, at, high) => {
        const body = JSON.stringify(event);
        const good = createHmac('sha256', SECRET).update(`${NOW}.${body}`).digest('hex');
        // Same low byte as the right digit: what Buffer.from(…, 'hex') used to keep.
        const char = String.fromCharCode((high << 8) | good.charCodeAt(at));
        const headers = {
          'x-service-signature': `t=${NOW},v1=${good.slice(0, at)}${char}${good.slice(at + 1)}`,
          'x-service-event': event.type,
          'x-service-delivery': 'dlv_1',
        };
        const error = verifyError(() => webhooks.verify(body, headers));
        expect((error as WebhookVerificationError)?.code).toBe('SIGNATURE_MISMATCH');
      }),
      RUNS,
    );
  });
  it('a signed envelope is never an event when its bytes are not UTF-8 or its id is not well-formed', () => {
    const webhooks = make();
    const notUtf8 = fc.constantFrom(
      [0x80],
      [0xff],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xe2, 0x82],
    );
    const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
    fc.assert(
      fc.property(envelopeArb, notUtf8, loneSurrogate, fc.boolean(), (event, junk, lone, asBytes) => {
        // The junk goes inside the id's string, where a decoder would have turned it into U+FFFD.
        const text = JSON.stringify({ ...event, id: `evt_${asBytes ? '#' : lone}` });
        const [head, tail] = text.split('"evt_#"') as [string, string];
        const body = asBytes
          ? new Uint8Array([...Buffer.from(`${head}"evt_`), ...junk, ...Buffer.from(`"${tail}`)])
          : text;
        const headers = {
          'x-service-signature': sign(SECRET, body, NOW),
          'x-service-event': event.type,
          'x-service-delivery': 'dlv_1',
        };
        const error = verifyError(() => webhooks.verify(body, headers));
        expect((error as WebhookVerificationError)?.code).toBe(asBytes ? 'INVALID_JSON' : 'INVALID_EVENT');
      }),
      RUNS,
    );
  });
});

/** A header that carries the right signature among noise: any order, spaces, other schemes, wrong v1s, either case. */
const formattedHeaderArb = (t: string, good: string) =>
  fc
    .record({
      upper: fc.boolean(),
      wrong: fc.array(hex64, { maxLength: 3 }),
      others: fc.array(
        fc.tuple(
          fc.constantFrom('v0', 'v2', 'v1a', 'x', 'sha256'),
          fc.string({ maxLength: 70 }).filter((v) => !v.includes(',')),
        ),
        { maxLength: 3 },
      ),
    })
    .chain(({ upper, wrong, others }) => {
      const parts = [
        `t=${t}`,
        `v1=${upper ? good.toUpperCase() : good}`,
        ...wrong.filter((w) => w !== good).map((w) => `v1=${w}`),
        ...others.map(([k, v]) => `${k}=${v}`),
      ];
      return fc.tuple(
        fc.shuffledSubarray(parts, { minLength: parts.length, maxLength: parts.length }),
        fc.array(fc.constantFrom(',', ', ', ',  '), { minLength: parts.length, maxLength: parts.length }),
      );
    })
    .map(([parts, seps]) => parts.map((p, i) => (i === 0 ? p : `${seps[i]}${p}`)).join(''));

describe('property: valid deliveries', () => {
  it('any envelope signed with a configured secret verifies and returns the same event', () => {
    fc.assert(
      fc.property(
        envelopeArb,
        // Up to the 3 secrets a Webhooks accepts.
        fc.array(secretArb, { minLength: 1, maxLength: 3 }),
        fc.nat(),
        fc.integer({ min: -300, max: 300 }),
        fc.nat({ max: 3 }),
        fc.string({ minLength: 1, maxLength: 40 }).filter((d) => d.trim() !== ''),
        (event, secrets, pick, skew, zeros, deliveryId) => {
          const secret = secrets[pick % secrets.length] as string;
          const body = JSON.stringify(event);
          const t = `${'0'.repeat(zeros)}${NOW + skew}`;
          const good = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
          const webhooks = make({ secret: secrets });
          fc.assert(
            fc.property(formattedHeaderArb(t, good), (signature) => {
              const headers = {
                'x-service-signature': signature,
                'x-service-event': event.type,
                'x-service-delivery': deliveryId,
              };
              expect(webhooks.verify(body, headers)).toEqual(JSON.parse(body));
              expect(webhooks.verify(Buffer.from(body), headers)).toEqual(JSON.parse(body));
            }),
            { numRuns: 3 },
          );
        },
      ),
      RUNS,
    );
  });

  it('flipping any single byte of a signed body gives SIGNATURE_MISMATCH', () => {
    const webhooks = make();
    fc.assert(
      fc.property(envelopeArb, fc.nat(), fc.integer({ min: 1, max: 255 }), (event, at, mask) => {
        const body = Buffer.from(JSON.stringify(event));
        const headers = {
          'x-service-signature': sign(SECRET, body, NOW),
          'x-service-event': event.type,
          'x-service-delivery': 'dlv_1',
        };
        expect(webhooks.verify(body, headers).id).toBe(event.id);
        const tampered = Buffer.from(body);
        const i = at % tampered.length;
        tampered[i] = (tampered[i] as number) ^ mask;
        const error = verifyError(() => webhooks.verify(tampered, headers));
        expect((error as WebhookVerificationError)?.code).toBe('SIGNATURE_MISMATCH');
      }),
      RUNS,
    );
  });

  it('a timestamp beyond the tolerance never verifies, even correctly signed', () => {
    const webhooks = make({ tolerance: 300 });
    fc.assert(
      fc.property(envelopeArb, fc.integer({ min: 301, max: 10 ** 9 }), fc.boolean(), (event, off, future) => {
        const body = JSON.stringify(event);
        const t = future ? NOW + off : Math.max(0, NOW - off);
        const headers = {
          'x-service-signature': sign(SECRET, body, t),
          'x-service-event': event.type,
          'x-service-delivery': 'dlv_1',
        };
        const error = verifyError(() => webhooks.verify(body, headers));
        expect((error as WebhookVerificationError)?.code).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
      }),
      RUNS,
    );
  });
});
