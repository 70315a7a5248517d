import { describe, expect, it } from 'vitest';
import { sign, Webhooks, type WebhooksOptions, WebhookVerificationError } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_verify_test_0a9b8c';
const OLD = 'whsec_verify_old_77aa';
const NOW = 1_800_000_000;

function webhooks(options: Partial<WebhooksOptions> = {}) {
  return new Webhooks({ secret: SECRET, now: () => NOW * 1000 + 500, ...options });
}

function signed(overrides: { secret?: string; t?: number | string; type?: string } = {}) {
  const event = createTestEvent(overrides.type ?? 'image.created', undefined, { id: 'evt_verify_1', created: NOW });
  const { body, headers } = createSignedRequest(event, {
    secret: overrides.secret ?? SECRET,
    timestamp: overrides.t ?? NOW,
    deliveryId: 'dlv_1',
  });
  return { event, body, headers: headers as Record<string, string | undefined> };
}

/** The error verify() throws, checked to be a WebhookVerificationError. */
function rejection(run: () => unknown): WebhookVerificationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('verify() did not throw');
}

const bodyWith = (patch: Record<string, unknown>) =>
  JSON.stringify({ id: 'evt_1', type: 'image.created', created: NOW, data: { object: {} }, ...patch });

const CASES: [string, () => { body: string | Uint8Array; headers: Record<string, string | undefined> }, string][] = [
  [
    'no signature header',
    () => ({ ...signed(), headers: { ...signed().headers, 'x-service-signature': undefined } }),
    'MISSING_SIGNATURE',
  ],
  [
    'a malformed signature',
    () => ({ ...signed(), headers: { ...signed().headers, 'x-service-signature': 't=1.5,v1=aa' } }),
    'MALFORMED_SIGNATURE',
  ],
  ['a stale timestamp', () => signed({ t: NOW - 301 }), 'TIMESTAMP_OUT_OF_TOLERANCE'],
  ['a future timestamp', () => signed({ t: NOW + 301 }), 'TIMESTAMP_OUT_OF_TOLERANCE'],
  ['a wrong secret', () => signed({ secret: 'whsec_other' }), 'SIGNATURE_MISMATCH'],
  [
    'a tampered body',
    () => ({ ...signed(), body: signed().body.replace('evt_verify_1', 'evt_verify_2') }),
    'SIGNATURE_MISMATCH',
  ],
  ['a signed non-JSON body', () => sigBody('{not json'), 'INVALID_JSON'],
  ['a signed non-envelope', () => sigBody(bodyWith({ id: 'nope' })), 'INVALID_EVENT'],
  ['a signed body that is not UTF-8 (0xFF in the id)', () => sigBody(notUtf8Id(0xff)), 'INVALID_JSON'],
  [
    'a signed body with a UTF-8-encoded surrogate (ED A0 80)',
    () => sigBody(notUtf8Id(0xed, 0xa0, 0x80)),
    'INVALID_JSON',
  ],
  ['an id holding a lone surrogate', () => sigBody(bodyWith({ id: 'evt_\ud800' })), 'INVALID_EVENT'],
  ['an id holding a lone low surrogate', () => sigBody(bodyWith({ id: 'evt_a\udc00b' })), 'INVALID_EVENT'],
  [
    'an X-Service-Event unlike the body',
    () => ({ ...signed(), headers: { ...signed().headers, 'x-service-event': 'image.deleted' } }),
    'EVENT_TYPE_MISMATCH',
  ],
  [
    'no X-Service-Delivery',
    () => ({ ...signed(), headers: { ...signed().headers, 'x-service-delivery': undefined } }),
    'MISSING_HEADER',
  ],
  [
    'a blank X-Service-Delivery',
    () => ({ ...signed(), headers: { ...signed().headers, 'x-service-delivery': '  ' } }),
    'MISSING_HEADER',
  ],
];

/** A signed-body envelope whose id holds these bytes, which are not UTF-8. */
function notUtf8Id(...bytes: number[]): Uint8Array {
  const [head, tail] = bodyWith({ id: 'evt_#' }).split('#') as [string, string];
  return new Uint8Array([...Buffer.from(head), ...bytes, ...Buffer.from(tail)]);
}

function sigBody(body: string | Uint8Array) {
  return {
    body,
    headers: {
      'x-service-signature': sign(SECRET, body, NOW),
      'x-service-event': 'image.created',
      'x-service-delivery': 'dlv_1',
    } as Record<string, string | undefined>,
  };
}

describe('webhooks.verify()', () => {
  it('returns the parsed event synchronously', () => {
    const { event, body, headers } = signed();
    const result = webhooks().verify(body, headers);
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toEqual(event);
  });

  it('accepts the body as a string, a Buffer or a plain Uint8Array', () => {
    const { event, body, headers } = signed();
    const w = webhooks();
    expect(w.verify(Buffer.from(body), headers)).toEqual(event);
    expect(w.verify(new TextEncoder().encode(body), headers)).toEqual(event);
  });

  it('accepts a Headers instance, and header names in any case', () => {
    const { event, body, headers } = signed();
    const w = webhooks();
    expect(w.verify(body, new Headers(headers as Record<string, string>))).toEqual(event);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(w.verify(body, upper)).toEqual(event);
  });

  it.each(CASES)('%s → throws %s with status 400', (_name, make, code) => {
    const { body, headers } = make();
    const error = rejection(() => webhooks().verify(body, headers));
    expect(error.code).toBe(code);
    expect(error.status).toBe(400);
    expect(error.name).toBe('WebhookVerificationError');
    expect(error.message.length).toBeGreaterThan(20);
    expect(error.toJSON()).toEqual({ error: { code, message: error.message } });
  });

  it('a repeated X-Service-Signature cannot smuggle a second signature: two t → MALFORMED_SIGNATURE', () => {
    const { body, headers } = signed();
    const good = headers['x-service-signature'] as string;
    const forged = sign('whsec_attacker', body, NOW);
    const asArray = { ...headers, 'x-service-signature': [forged, good] };
    expect(rejection(() => webhooks().verify(body, asArray)).code).toBe('MALFORMED_SIGNATURE');
    const appended = new Headers(headers as Record<string, string>);
    appended.append('x-service-signature', forged);
    expect(rejection(() => webhooks().verify(body, appended)).code).toBe('MALFORMED_SIGNATURE');
  });

  it('never shows the secret or the expected signature in an error', () => {
    const { body, headers } = signed({ secret: 'whsec_other' });
    const expected = sign(SECRET, body, NOW).split('v1=')[1] as string;
    const error = rejection(() => webhooks({ secret: [SECRET, OLD] }).verify(body, headers));
    for (const text of [error.message, String(error.stack), JSON.stringify(error.toJSON())]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(OLD);
      expect(text).not.toContain(expected);
    }
  });

  it('accepts any secret of a rotation list', () => {
    const w = webhooks({ secret: [SECRET, OLD] });
    expect(w.verify(signed({ secret: OLD }).body, signed({ secret: OLD }).headers).id).toBe('evt_verify_1');
    expect(w.verify(signed().body, signed().headers).id).toBe('evt_verify_1');
    expect(rejection(() => webhooks({ secret: [OLD] }).verify(signed().body, signed().headers)).code).toBe(
      'SIGNATURE_MISMATCH',
    );
  });

  it('tolerance holds both ways at its edge, with the injected clock', () => {
    const w = webhooks({ tolerance: 60 });
    for (const t of [NOW - 60, NOW, NOW + 60])
      expect(w.verify(signed({ t }).body, signed({ t }).headers).id).toBeTruthy();
    for (const t of [NOW - 61, NOW + 61]) {
      expect(rejection(() => w.verify(signed({ t }).body, signed({ t }).headers)).code).toBe(
        'TIMESTAMP_OUT_OF_TOLERANCE',
      );
    }
  });

  it('says which way the clock is off', () => {
    const w = webhooks();
    expect(
      rejection(() => w.verify(signed({ t: NOW - 1000 }).body, signed({ t: NOW - 1000 }).headers)).message,
    ).toMatch(/old/);
    expect(
      rejection(() => w.verify(signed({ t: NOW + 1000 }).body, signed({ t: NOW + 1000 }).headers)).message,
    ).toMatch(/future/);
  });

  it('tolerance false accepts any t, even 0', () => {
    const w = webhooks({ tolerance: false });
    expect(w.verify(signed({ t: 0 }).body, signed({ t: 0 }).headers).id).toBe('evt_verify_1');
  });

  it('verifies a t with leading zeros as signed', () => {
    const t = `000${NOW}`;
    expect(webhooks().verify(signed({ t }).body, signed({ t }).headers).id).toBe('evt_verify_1');
  });

  it('returns events of unknown types too', () => {
    const { body, headers } = signed({ type: 'image.resized' });
    expect(webhooks().verify(body, headers).type).toBe('image.resized');
  });

  it('a v1 that is not 64 ASCII hex digits never matches, even where each character keeps the right low byte', () => {
    const { body, headers } = signed();
    const good = (headers['x-service-signature'] as string).split('v1=')[1] as string;
    const w = webhooks();
    expect(w.verify(body, headers).id).toBe('evt_verify_1');
    // "š" is U+0161: its low byte is "a". Buffer.from(…, 'hex') used to read it as "a".
    for (const at of [0, good.search(/[a-f]/), 63]) {
      for (const high of [0x100, 0x4e00, 0xff00]) {
        const v1 = `${good.slice(0, at)}${String.fromCharCode(high | good.charCodeAt(at))}${good.slice(at + 1)}`;
        const forged = { ...headers, 'x-service-signature': `t=${NOW},v1=${v1}` };
        expect(rejection(() => w.verify(body, forged)).code).toBe('SIGNATURE_MISMATCH');
      }
    }
  });

  it('distinct ids never collide: ids that are not UTF-8 or not well-formed are refused, a paired surrogate is kept', async () => {
    const w = webhooks();
    const ran: string[] = [];
    w.onAny((event) => void ran.push(event.id));
    const deliver = (body: string | Uint8Array) => {
      const { headers } = sigBody(body);
      return w.handle({ method: 'POST', headers, body });
    };
    // Each pair decoded to one string before ("evt_\uFFFD"): the second, a different event, was a duplicate.
    for (const [a, b, code] of [
      [notUtf8Id(0xff), notUtf8Id(0xfe), 'INVALID_JSON'],
      [bodyWith({ id: 'evt_\ud800' }), bodyWith({ id: 'evt_\udbff' }), 'INVALID_EVENT'],
    ] as const) {
      for (const body of [a, b]) {
        const answer = await deliver(body);
        expect({ status: answer.status, code: JSON.parse(answer.body).error?.code }).toEqual({ status: 400, code });
      }
    }
    expect((await deliver(bodyWith({ id: 'evt_\ud83d\ude00' }))).status).toBe(200);
    expect(ran).toEqual(['evt_\u{1F600}']);
  });

  it('drops __proto__ keys instead of polluting prototypes', () => {
    const body = `{"id":"evt_p","type":"image.created","created":1,"data":{"object":{"__proto__":{"polluted":1},"x":1}}}`;
    const event = webhooks().verify(body, sigBody(body).headers);
    expect(event.data.object).toEqual({ x: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(event.data.object)).toBe(Object.prototype);
  });
});
