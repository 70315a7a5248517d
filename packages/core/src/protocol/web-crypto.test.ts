/**
 * The Web Crypto path (runtimes without node:crypto) against the node:crypto path: the same
 * answer, error code and message on every input. The seam `setWebCryptoOnly(true)` makes core
 * behave in Node as it does on Workers without Node compatibility.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isWebhookVerificationError, sign, Webhooks, type WebhooksOptions } from '../index.js';
import { createSignedRequest, createTestEvent } from '../testing.js';
import { bytesEqual, bytesToHex, hmacSha256, setWebCryptoOnly } from './crypto.js';
import { readDeliveryHeaders } from './headers.js';
import { resolveSecrets } from './secrets.js';
import { verifyDelivery, verifyDeliveryWeb } from './verify.js';
import { hmacSha256Web } from './web-crypto.js';

const SECRET = 'whsec_webcrypto_5e4d3c';
const OLD = 'whsec_webcrypto_old_9z';
const NOW = 1_800_000_000;
const OPTIONS = { secrets: resolveSecrets([SECRET, OLD]), tolerance: 300, now: () => NOW * 1000 + 250 } as const;

afterEach(() => {
  setWebCryptoOnly(false);
  vi.restoreAllMocks();
});

type Headers = Record<string, string | undefined>;
interface Case {
  name: string;
  body: string | Uint8Array;
  headers: Headers;
}

const bytes = (body: string | Uint8Array) => (typeof body === 'string' ? new TextEncoder().encode(body) : body);

function signedCase(
  name: string,
  options: { secret?: string; t?: number | string; type?: string; headers?: Headers } = {},
): Case {
  const event = createTestEvent(options.type ?? 'image.created', undefined, { id: `evt_${name.length}`, created: NOW });
  const signed = createSignedRequest(event, {
    secret: options.secret ?? SECRET,
    timestamp: options.t ?? NOW,
    deliveryId: 'dlv_corpus',
  });
  return { name, body: signed.body, headers: { ...signed.headers, ...options.headers } };
}

function rawCase(name: string, body: string | Uint8Array, headers: Headers = {}, t: number | string = NOW): Case {
  return {
    name,
    body,
    headers: {
      'x-service-event': 'image.created',
      'x-service-delivery': 'dlv_raw',
      'x-service-signature': sign(SECRET, body, t),
      ...headers,
    },
  };
}

const valid = signedCase('valid');
const v1Of = (c: Case) => c.headers['x-service-signature']?.split('v1=')[1] ?? '';
const notUtf8 = new Uint8Array([
  ...bytes('{"id":"evt_b","type":"image.created","created":1,"data":{"object":{"n":"'),
  0xff,
  0xfe,
  ...bytes('"}}}'),
]);

/** Valid and invalid deliveries: every 400 row of the contract, and the accepted variants. */
const CORPUS: Case[] = [
  valid,
  signedCase('old secret', { secret: OLD }),
  signedCase('unknown type', { type: 'image.resized' }),
  signedCase('leading zeros in t', { t: `000${NOW}` }),
  signedCase('t 300 s old', { t: NOW - 300 }),
  signedCase('t 300 s ahead', { t: NOW + 300 }),
  {
    ...valid,
    name: 'upper-case hex',
    headers: { ...valid.headers, 'x-service-signature': `t=${NOW},v1=${v1Of(valid).toUpperCase()}` },
  },
  {
    ...valid,
    name: 'v1 second',
    headers: { ...valid.headers, 'x-service-signature': `v0=x, v1=${'0'.repeat(64)}, t=${NOW}, v1=${v1Of(valid)}` },
  },
  rawCase('not UTF-8 bytes', notUtf8),
  rawCase(
    'a UTF-8-encoded surrogate in the id',
    new Uint8Array([
      ...bytes('{"id":"evt_'),
      0xed,
      0xa0,
      0x80,
      ...bytes('","type":"image.created","created":1,"data":{"object":{}}}'),
    ]),
  ),
  rawCase('an id with a lone surrogate', JSON.stringify({ ...createTestEvent('image.created'), id: 'evt_\ud800' })),
  rawCase('non-ASCII text', JSON.stringify(createTestEvent('image.created', { name: 'café-日本-🙂' }))),
  rawCase('large body', JSON.stringify(createTestEvent('image.created', { blob: 'x'.repeat(200_000) }))),
  { ...valid, name: 'no signature', headers: { ...valid.headers, 'x-service-signature': undefined } },
  { ...valid, name: 'blank signature', headers: { ...valid.headers, 'x-service-signature': '  ' } },
  { ...valid, name: 'no t', headers: { ...valid.headers, 'x-service-signature': `v1=${v1Of(valid)}` } },
  {
    ...valid,
    name: 'two t',
    headers: { ...valid.headers, 'x-service-signature': `t=${NOW},t=${NOW},v1=${v1Of(valid)}` },
  },
  { ...valid, name: 't=1e9', headers: { ...valid.headers, 'x-service-signature': `t=1e9,v1=${v1Of(valid)}` } },
  { ...valid, name: 'empty v1', headers: { ...valid.headers, 'x-service-signature': `t=${NOW},v1=` } },
  signedCase('stale', { t: NOW - 301 }),
  signedCase('future', { t: NOW + 301 }),
  signedCase('t=0', { t: 0 }),
  signedCase('wrong secret', { secret: 'whsec_someone_else' }),
  { ...valid, name: 'tampered body', body: `${valid.body} ` },
  {
    ...valid,
    name: 'v1 of 63 digits',
    headers: { ...valid.headers, 'x-service-signature': `t=${NOW},v1=${v1Of(valid).slice(1)}` },
  },
  {
    ...valid,
    name: 'v1 with "š" (low byte "a") for a hex digit',
    headers: {
      ...valid.headers,
      'x-service-signature': `t=${NOW},v1=${v1Of(valid).replace(/[a-f]/, (c) => String.fromCharCode(0x100 | c.charCodeAt(0)))}`,
    },
  },
  {
    ...valid,
    name: 'v1 of another t',
    headers: { ...valid.headers, 'x-service-signature': `t=${NOW - 1},v1=${v1Of(valid)}` },
  },
  {
    ...valid,
    name: 'same bytes as text',
    body: new TextDecoder().decode(notUtf8),
    headers: rawCase('', notUtf8).headers,
  },
  rawCase('not JSON', 'not json'),
  rawCase('empty body', ''),
  rawCase('BOM', `\uFEFF${valid.body}`),
  rawCase('array', '[]'),
  rawCase('no evt_ id', JSON.stringify({ ...createTestEvent('image.created'), id: 'img_1' })),
  rawCase('fractional created', JSON.stringify({ ...createTestEvent('image.created'), created: 1.5 })),
  rawCase('data.object null', JSON.stringify({ ...createTestEvent('image.created'), data: { object: null } })),
  signedCase('no event header', { headers: { 'x-service-event': undefined } }),
  signedCase('event header unlike body', { headers: { 'x-service-event': 'image.deleted' } }),
  signedCase('no delivery header', { headers: { 'x-service-delivery': undefined } }),
  signedCase('blank delivery header', { headers: { 'x-service-delivery': ' ' } }),
];

type Outcome =
  | { ok: true; event: unknown; timestamp: number; deliveryId: string }
  | { ok: false; code: string; message: string };

function outcome(result: { event: unknown; timestamp: number; deliveryId: string }): Outcome {
  return { ok: true, event: result.event, timestamp: result.timestamp, deliveryId: result.deliveryId };
}

function failure(error: unknown): Outcome {
  if (!isWebhookVerificationError(error)) throw error;
  return { ok: false, code: error.code, message: error.message };
}

function viaNode(c: Case, options: typeof OPTIONS = OPTIONS): Outcome {
  try {
    return outcome(verifyDelivery(options, bytes(c.body), readDeliveryHeaders(c.headers)));
  } catch (error) {
    return failure(error);
  }
}

async function viaWeb(c: Case, options: typeof OPTIONS = OPTIONS): Promise<Outcome> {
  try {
    return outcome(await verifyDeliveryWeb(options, bytes(c.body), readDeliveryHeaders(c.headers)));
  } catch (error) {
    return failure(error);
  }
}

describe('HMAC-SHA256 on Web Crypto', () => {
  it('equals node:crypto on arbitrary secrets, timestamps and bodies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
        fc.stringMatching(/^[0-9]{1,12}$/),
        fc.uint8Array({ maxLength: 4096 }),
        async (secret, t, body) => {
          expect(bytesToHex(await hmacSha256Web(secret, t, body))).toBe(bytesToHex(hmacSha256(secret, t, body)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('imports each secret once, however many deliveries it verifies', async () => {
    const importKey = vi.spyOn(globalThis.crypto.subtle, 'importKey');
    const secret = `whsec_cache_${Math.random().toString(36).slice(2)}`;
    for (let i = 0; i < 5; i++) await hmacSha256Web(secret, String(NOW + i), new Uint8Array([i]));
    expect(importKey).toHaveBeenCalledTimes(1);
  });
});

describe('the Web Crypto path decides exactly as the node:crypto path', () => {
  it.each(CORPUS)('$name', async (c) => {
    expect(await viaWeb(c)).toEqual(viaNode(c));
  });

  it('the corpus covers accepted deliveries and every 400 code', async () => {
    const outcomes = CORPUS.map((c) => viaNode(c));
    expect(outcomes.filter((o) => o.ok).length).toBeGreaterThanOrEqual(9);
    expect(new Set(outcomes.map((o) => (o.ok ? 'ok' : o.code)))).toEqual(
      new Set([
        'ok',
        'MISSING_SIGNATURE',
        'MALFORMED_SIGNATURE',
        'TIMESTAMP_OUT_OF_TOLERANCE',
        'SIGNATURE_MISMATCH',
        'INVALID_JSON',
        'INVALID_EVENT',
        'EVENT_TYPE_MISMATCH',
        'MISSING_HEADER',
      ]),
    );
  });

  it('on mutated signature headers and bodies (property)', async () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{0,66}$/);
    const part = fc.oneof(
      fc.constant(`t=${NOW}`),
      fc.constant(`v1=${v1Of(valid)}`),
      hex.map((h) => `v1=${h}`),
      fc.stringMatching(/^[0-9]{0,11}$/).map((t) => `t=${t}`),
      fc.constantFrom('v0=abc', ' ', '', 'junk', 'v1', '=x'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(part, { maxLength: 5 }),
        fc.constantFrom(',', ', '),
        fc.option(fc.integer({ min: 0, max: valid.body.length - 1 })),
        async (parts, separator, flip) => {
          const body =
            flip === null
              ? valid.body
              : `${valid.body.slice(0, flip)}${valid.body[flip] === 'a' ? 'b' : 'a'}${valid.body.slice(flip + 1)}`;
          const c: Case = {
            name: 'generated',
            body,
            headers: { ...valid.headers, 'x-service-signature': parts.join(separator) },
          };
          expect(await viaWeb(c)).toEqual(viaNode(c));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('webhooks.handle() answers the same with node:crypto hidden', async () => {
    const answers = async () => {
      const options: WebhooksOptions = { secret: [SECRET, OLD], now: OPTIONS.now };
      const webhooks = new Webhooks(options);
      const runs: string[] = [];
      webhooks.onAny((event) => void runs.push(event.id));
      const list = [];
      for (const c of [...CORPUS, valid])
        list.push(await webhooks.handle({ method: 'POST', headers: c.headers, body: c.body }));
      return { list, runs };
    };
    const node = await answers();
    setWebCryptoOnly(true);
    const web = await answers();
    expect(web).toEqual(node);
    expect(node.list.at(-1)?.body).toBe('{"received":true,"duplicate":true}');
  });
});

describe('without node:crypto', () => {
  it('verify() throws a clear error pointing to verifyAsync, for valid and invalid requests alike', () => {
    setWebCryptoOnly(true);
    const webhooks = new Webhooks({ secret: SECRET, now: OPTIONS.now });
    for (const c of [valid, CORPUS.find((x) => x.name === 'no signature') as Case]) {
      let thrown: unknown;
      try {
        webhooks.verify(c.body, c.headers);
      } catch (error) {
        thrown = error;
      }
      expect(isWebhookVerificationError(thrown)).toBe(false);
      expect((thrown as Error).message).toMatch(/node:crypto is not available.*verifyAsync/);
    }
  });

  it('verifyAsync() verifies on Web Crypto and rejects with the same errors', async () => {
    const stale = signedCase('stale', { t: NOW - 301 });
    setWebCryptoOnly(true);
    const webhooks = new Webhooks({ secret: SECRET, now: OPTIONS.now });
    expect(await webhooks.verifyAsync(valid.body, valid.headers)).toEqual(JSON.parse(valid.body as string));
    await expect(webhooks.verifyAsync(stale.body, stale.headers)).rejects.toMatchObject({
      code: 'TIMESTAMP_OUT_OF_TOLERANCE',
      status: 400,
    });
  });

  it('verifyAsync() on Node gives what verify() gives', async () => {
    const webhooks = new Webhooks({ secret: SECRET, now: OPTIONS.now });
    expect(await webhooks.verifyAsync(valid.body, valid.headers)).toEqual(webhooks.verify(valid.body, valid.headers));
  });

  it('compares in constant time on bytes: equal, a last-byte difference, other lengths', () => {
    setWebCryptoOnly(true);
    const a = new Uint8Array(32).fill(7);
    const b = a.slice();
    expect(bytesEqual(a, b)).toBe(true);
    b[31] = 8;
    expect(bytesEqual(a, b)).toBe(false);
    expect(bytesEqual(a, a.slice(0, 31))).toBe(false);
  });
});
