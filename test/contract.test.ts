/**
 * The contract's table (docs/contract.md, "What every adapter answers"), run against every
 * adapter and framework version: the same request must get the same answer everywhere.
 */
import {
  EVENT_TYPES,
  type IdempotencyStore,
  MemoryStore,
  sign,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type Client, streamOf, type TestRequest, type TestResponse } from '@pixhook/test-helpers/adapters';
import {
  delivery,
  envelope,
  expectedSignature,
  nowSeconds,
  OLD_SECRET,
  SECRET,
  signedBody,
} from '@pixhook/test-helpers/deliveries';
import { afterEach, describe, expect, it } from 'vitest';

interface Rejection {
  name: string;
  request: () => TestRequest & { headers: Record<string, string> };
  status: number;
  code: string;
  options?: Partial<WebhooksOptions>;
  allow?: string;
}

const tamper = (sig: string): string => sig.replace(/v1=([0-9a-f])/, (_m, c: string) => `v1=${c === '0' ? '1' : '0'}`);
const sigOf = (body: string, t: string | number = nowSeconds()) => sign(SECRET, body, t);
const withSig = (signature: string | undefined) =>
  delivery(undefined, { headers: { 'x-service-signature': signature } });

/** `text` with these bytes, which are not UTF-8, in place of its "#". */
const notUtf8 = (text: string, ...bytes: number[]): Uint8Array => {
  const [head, tail] = text.split('#') as [string, string];
  return new Uint8Array([...Buffer.from(head), ...bytes, ...Buffer.from(tail)]);
};

/** Every error row of the contract, several ways each. */
const REJECTIONS: Rejection[] = [
  {
    name: 'GET',
    request: () => ({ ...delivery(), method: 'GET', body: undefined }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    allow: 'POST',
  },
  {
    name: 'PUT with a valid delivery',
    request: () => ({ ...delivery(), method: 'PUT' }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    allow: 'POST',
  },
  {
    name: 'DELETE',
    request: () => ({ ...delivery(), method: 'DELETE', body: undefined }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    allow: 'POST',
  },
  {
    name: 'body over maxBodyBytes with Content-Length',
    request: () => signedBody('x'.repeat(2048)),
    options: { maxBodyBytes: 1024 },
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'body over maxBodyBytes, streamed without Content-Length',
    request: () => ({ ...signedBody('{}'), body: streamOf(5 * 1024 * 1024) }),
    options: { maxBodyBytes: 64 * 1024 },
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  { name: 'no X-Service-Signature', request: () => withSig(undefined), status: 400, code: 'MISSING_SIGNATURE' },
  { name: 'an empty X-Service-Signature', request: () => withSig(''), status: 400, code: 'MISSING_SIGNATURE' },
  { name: 'a blank X-Service-Signature', request: () => withSig('   '), status: 400, code: 'MISSING_SIGNATURE' },
  { name: 'no t', request: () => withSig(`v1=${'a'.repeat(64)}`), status: 400, code: 'MALFORMED_SIGNATURE' },
  {
    name: 'several t',
    request: () => {
      const d = delivery();
      const t = nowSeconds();
      return { ...d, headers: { ...d.headers, 'x-service-signature': `t=${t},${sigOf(d.body, t)}` } };
    },
    status: 400,
    code: 'MALFORMED_SIGNATURE',
  },
  ...['1.5', '+1', '1e9', '-1', '0x10', ' ', ''].map((t) => ({
    name: `t=${JSON.stringify(t)}`,
    request: () => withSig(`t=${t},v1=${'a'.repeat(64)}`),
    status: 400,
    code: 'MALFORMED_SIGNATURE',
  })),
  { name: 'no v1', request: () => withSig(`t=${nowSeconds()}`), status: 400, code: 'MALFORMED_SIGNATURE' },
  {
    name: 'only a v0',
    request: () => withSig(`t=${nowSeconds()},v0=${'a'.repeat(64)}`),
    status: 400,
    code: 'MALFORMED_SIGNATURE',
  },
  { name: 'an empty v1', request: () => withSig(`t=${nowSeconds()},v1=`), status: 400, code: 'MALFORMED_SIGNATURE' },
  {
    name: 'a part that is not key=value',
    request: () => withSig(`t=${nowSeconds()},v1=${'a'.repeat(64)},junk`),
    status: 400,
    code: 'MALFORMED_SIGNATURE',
  },
  {
    name: 't 301 s in the past',
    request: () => delivery(undefined, { timestamp: nowSeconds() - 301 }),
    status: 400,
    code: 'TIMESTAMP_OUT_OF_TOLERANCE',
  },
  {
    // On the real clock, a second that ticks between signing and the check brings t + 301 back
    // within 300 s: a minute past the bound holds on a busy machine. The exact bound (±301 s) is
    // the fixed-clock test "tolerance edges" below.
    name: 't 360 s in the future',
    request: () => delivery(undefined, { timestamp: nowSeconds() + 360 }),
    status: 400,
    code: 'TIMESTAMP_OUT_OF_TOLERANCE',
  },
  {
    name: 't=0',
    request: () => delivery(undefined, { timestamp: 0 }),
    status: 400,
    code: 'TIMESTAMP_OUT_OF_TOLERANCE',
  },
  {
    name: 't beyond a custom tolerance of 10 s',
    request: () => delivery(undefined, { timestamp: nowSeconds() - 20 }),
    options: { tolerance: 10 },
    status: 400,
    code: 'TIMESTAMP_OUT_OF_TOLERANCE',
  },
  {
    name: 'a wrong secret',
    request: () => delivery(undefined, { secret: 'whsec_someone_else' }),
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'a tampered body',
    request: () => {
      const d = delivery();
      return { ...d, body: d.body.replace('"created":', '"created": ') };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'a body with a trailing newline',
    request: () => {
      const d = delivery();
      return { ...d, body: `${d.body}\n` };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'a tampered v1',
    request: () => {
      const d = delivery();
      return { ...d, headers: { ...d.headers, 'x-service-signature': tamper(d.headers['x-service-signature']!) } };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'a v1 of 63 hex digits',
    request: () => {
      const d = delivery();
      return { ...d, headers: { ...d.headers, 'x-service-signature': d.headers['x-service-signature']!.slice(0, -1) } };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'the signature of another t',
    request: () => {
      const d = delivery();
      const v1 = expectedSignature(d);
      // One less than the t that was signed (not the clock's: a second may tick in between).
      const signed = Number(/t=(\d+)/.exec(d.headers['x-service-signature'] ?? '')?.[1]);
      return { ...d, headers: { ...d.headers, 'x-service-signature': `t=${signed - 1},v1=${v1}` } };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'a valid v0 only beside a wrong v1',
    request: () => {
      const d = delivery();
      const t = nowSeconds();
      return {
        ...d,
        headers: { ...d.headers, 'x-service-signature': `t=${t},v0=${expectedSignature(d)},v1=${'0'.repeat(64)}` },
      };
    },
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  { name: 'a signed body that is not JSON', request: () => signedBody('not json'), status: 400, code: 'INVALID_JSON' },
  { name: 'a signed empty body', request: () => signedBody(''), status: 400, code: 'INVALID_JSON' },
  {
    name: 'a signed body with a BOM',
    request: () => signedBody(`\uFEFF${envelope('image.created')}`),
    status: 400,
    code: 'INVALID_JSON',
  },
  {
    name: 'a signed body that is not UTF-8',
    request: () => signedBody(notUtf8(envelope('image.created', { id: 'evt_#' }), 0xff)),
    status: 400,
    code: 'INVALID_JSON',
  },
  { name: 'a signed JSON array', request: () => signedBody('[]'), status: 400, code: 'INVALID_EVENT' },
  { name: 'a signed JSON string', request: () => signedBody('"evt_1"'), status: 400, code: 'INVALID_EVENT' },
  { name: 'a signed null', request: () => signedBody('null'), status: 400, code: 'INVALID_EVENT' },
  {
    name: 'an id without evt_',
    request: () => signedBody(envelope('image.created', { id: 'img_1' })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'an id of just evt_',
    request: () => signedBody(envelope('image.created', { id: 'evt_' })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'an id holding a lone surrogate',
    request: () => signedBody(envelope('image.created', { id: 'evt_\ud800' })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'a numeric id',
    request: () => signedBody(envelope('image.created', { id: 12 })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'a numeric type',
    request: () => signedBody(envelope('image.created', { type: 5 })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'no type',
    request: () => signedBody(envelope('image.created', { type: undefined })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'a fractional created',
    request: () => signedBody(envelope('image.created', { created: 1.5 })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'a string created',
    request: () => signedBody(envelope('image.created', { created: '1700000000' })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'no data',
    request: () => signedBody(envelope('image.created', { data: undefined })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'data.object null',
    request: () => signedBody(envelope('image.created', { data: { object: null } })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'data.object an array',
    request: () => signedBody(envelope('image.created', { data: { object: [] } })),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'no X-Service-Event',
    request: () => delivery(undefined, { headers: { 'x-service-event': undefined } }),
    status: 400,
    code: 'EVENT_TYPE_MISMATCH',
  },
  {
    name: 'X-Service-Event unlike the body',
    request: () => delivery(undefined, { headers: { 'x-service-event': 'image.deleted' } }),
    status: 400,
    code: 'EVENT_TYPE_MISMATCH',
  },
  {
    name: 'X-Service-Event in another case',
    request: () => delivery(undefined, { headers: { 'x-service-event': 'Image.Created' } }),
    status: 400,
    code: 'EVENT_TYPE_MISMATCH',
  },
  {
    name: 'no X-Service-Delivery',
    request: () => delivery(undefined, { headers: { 'x-service-delivery': undefined } }),
    status: 400,
    code: 'MISSING_HEADER',
  },
  {
    name: 'an empty X-Service-Delivery',
    request: () => delivery(undefined, { headers: { 'x-service-delivery': '' } }),
    status: 400,
    code: 'MISSING_HEADER',
  },
  // When several rows apply, the first in the contract's order wins.
  {
    name: 'precedence: GET without a signature',
    request: () => ({ ...withSig(undefined), method: 'GET', body: undefined }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    allow: 'POST',
  },
  {
    name: 'precedence: too large and unsigned',
    request: () => ({ ...withSig(undefined), body: 'x'.repeat(4096) }),
    options: { maxBodyBytes: 1024 },
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'precedence: no signature, not JSON',
    request: () => ({ ...withSig(undefined), body: 'nope' }),
    status: 400,
    code: 'MISSING_SIGNATURE',
  },
  {
    name: 'precedence: malformed and no delivery id',
    request: () => ({
      ...delivery(undefined, { headers: { 'x-service-delivery': undefined } }),
      headers: { 'x-service-signature': 't=1.5,v1=x' },
    }),
    status: 400,
    code: 'MALFORMED_SIGNATURE',
  },
  {
    name: 'precedence: stale and wrongly signed',
    request: () => delivery(undefined, { timestamp: nowSeconds() - 1000, secret: 'whsec_wrong' }),
    status: 400,
    code: 'TIMESTAMP_OUT_OF_TOLERANCE',
  },
  {
    name: 'precedence: wrong signature on non-JSON',
    request: () => signedBody('nope', 'image.created', { secret: 'whsec_wrong' }),
    status: 400,
    code: 'SIGNATURE_MISMATCH',
  },
  {
    name: 'precedence: non-JSON without event header',
    request: () => signedBody('nope', ''),
    status: 400,
    code: 'INVALID_JSON',
  },
  {
    name: 'precedence: not an envelope, header mismatch',
    request: () => signedBody(envelope('image.created', { id: 'x' }), 'quota.warned'),
    status: 400,
    code: 'INVALID_EVENT',
  },
  {
    name: 'precedence: type mismatch and no delivery id',
    request: () =>
      delivery(undefined, { headers: { 'x-service-event': 'quota.warned', 'x-service-delivery': undefined } }),
    status: 400,
    code: 'EVENT_TYPE_MISMATCH',
  },
];

/** A store whose every method fails, as an unreachable database would. */
class BrokenStore implements IdempotencyStore {
  calls = 0;
  async claim(): Promise<never> {
    this.calls++;
    throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
  }
  async complete(): Promise<void> {}
  async release(): Promise<void> {}
}

function expectError(res: TestResponse, status: number, code: string): void {
  expect({ status: res.status, code: (res.json as { error?: { code?: string } })?.error?.code }).toEqual({
    status,
    code,
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const message = (res.json as { error: { message: unknown } }).error.message;
  expect(typeof message).toBe('string');
  expect((message as string).length).toBeGreaterThan(20);
}

describe.each(ADAPTERS)('contract: $name', (adapter) => {
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  /** A fresh app with `webhooks`, counting handler runs and onError calls. */
  async function mount(options: Partial<WebhooksOptions> = {}) {
    const webhooks = new Webhooks({ secret: SECRET, ...options });
    const runs: { type: string; id: string; deliveryId: string; timestamp: number; request: unknown }[] = [];
    const errors: WebhookVerificationError[] = [];
    webhooks.onAny((event, context) => {
      runs.push({ type: event.type, id: event.id, ...context });
    });
    webhooks.onError((error) => {
      errors.push(error);
    });
    const client = await adapter.create(webhooks);
    clients.push(client);
    return { webhooks, client, runs, errors };
  }

  describe('rejections', () => {
    it.each(REJECTIONS)('$name → $status $code', async (row) => {
      const { client, runs, errors } = await mount(row.options);
      const request = row.request();
      const res = await client.send(request);
      expectError(res, row.status, row.code);
      if (row.allow) expect(res.headers.allow).toBe(row.allow);
      expect(runs).toHaveLength(0);
      expect(errors.map((e) => e.code)).toEqual([row.code]);
      // Never a secret nor the expected signature in an answer.
      const expected = typeof request.body === 'string' ? sigOf(request.body).split('v1=')[1] : undefined;
      for (const secret of [SECRET, OLD_SECRET, expected].filter(Boolean) as string[]) {
        expect(res.text).not.toContain(secret);
        expect(errors[0]?.message).not.toContain(secret);
      }
    });
  });

  describe('accepted deliveries', () => {
    it.each(EVENT_TYPES)('%s → 200, its handler runs once with the event and context', async (type) => {
      const { webhooks, client, runs } = await mount();
      const typed: unknown[] = [];
      webhooks.on(type, (event) => {
        typed.push(event);
      });
      const event = createTestEvent(type);
      const request = delivery(event);
      const res = await client.send(request);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ received: true });
      expect(typed).toEqual([event]);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ type, id: event.id, deliveryId: request.headers['x-service-delivery'] });
      expect(runs[0]?.timestamp).toBe(Number(request.headers['x-service-signature']!.match(/t=(\d+)/)?.[1]));
      expect(runs[0]?.request).toBeTypeOf('object');
    });

    it('dispatches on the signed type, to that type only', async () => {
      const { webhooks, client } = await mount();
      const seen: string[] = [];
      webhooks.on('image.created', () => void seen.push('created'));
      webhooks.on(['quota.warned', 'quota.exceeded'], (e) => void seen.push(e.type));
      await client.send(delivery(createTestEvent('quota.exceeded')));
      await client.send(delivery(createTestEvent('quota.warned')));
      expect(seen).toEqual(['quota.exceeded', 'quota.warned']);
    });

    it('no handler registered → 200', async () => {
      const webhooks = new Webhooks({ secret: SECRET });
      const client = await adapter.create(webhooks);
      clients.push(client);
      expect((await client.send(delivery())).status).toBe(200);
    });

    it('an unknown event type → 200 and onAny receives it', async () => {
      const { client, runs } = await mount();
      const event = createTestEvent('image.resized', { id: 'img_9' });
      const res = await client.send(delivery(event));
      expect(res.status).toBe(200);
      expect(runs.map((r) => r.type)).toEqual(['image.resized']);
    });

    it('the Content-Type is not checked: the signature decides', async () => {
      const { client, runs } = await mount();
      expect((await client.send(delivery(undefined, { headers: { 'content-type': 'text/plain' } }))).status).toBe(200);
      expect((await client.send(delivery(undefined, { headers: { 'content-type': undefined } }))).status).toBe(200);
      expect(
        (await client.send(delivery(undefined, { headers: { 'content-type': 'application/x-www-form-urlencoded' } })))
          .status,
      ).toBe(200);
      expect(runs).toHaveLength(3);
    });

    it.each([';', '{', 'a b', ''])(
      'a Content-Type that does not parse (%j) is not checked either → 200',
      async (type) => {
        const { client, runs } = await mount();
        const res = await client.send(delivery(undefined, { headers: { 'content-type': type } }));
        expect({ status: res.status, json: res.json }).toEqual({ status: 200, json: { received: true } });
        expect(runs).toHaveLength(1);
      },
    );

    it('verifies raw bytes, not decoded text: a body that is not valid UTF-8', async () => {
      const { client, runs } = await mount();
      const [head, tail] = JSON.stringify(createTestEvent('image.created', { name: '@@' })).split('@@') as [
        string,
        string,
      ];
      // Two bytes that are not UTF-8 inside a string value: signed and sent as bytes. The signature
      // holds, then the body is refused: JSON is UTF-8 (RFC 8259), and decoding would merge ids.
      const bytes = Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xfe]), Buffer.from(tail)]);
      expectError(await client.send(signedBody(bytes)), 400, 'INVALID_JSON');
      // The same bytes signed as their decoded text do not verify.
      const asText = signedBody(bytes.toString('utf8'));
      expectError(await client.send({ ...asText, body: bytes }), 400, 'SIGNATURE_MISMATCH');
      expect(runs).toHaveLength(0);
    });

    it('accepts non-ASCII UTF-8 bodies signed over their bytes', async () => {
      const { client, runs } = await mount();
      const event = createTestEvent('image.created', { filename: 'café-日本-🙂.jpg' });
      expect((await client.send(delivery(event))).status).toBe(200);
      expect(runs).toHaveLength(1);
    });

    it('secret rotation: a signature with any configured secret is accepted', async () => {
      const { client, runs } = await mount({ secret: [SECRET, OLD_SECRET] });
      expect((await client.send(delivery(undefined, { secret: OLD_SECRET }))).status).toBe(200);
      expect((await client.send(delivery(undefined, { secret: SECRET }))).status).toBe(200);
      const res = await client.send(delivery(undefined, { secret: 'whsec_third' }));
      expectError(res, 400, 'SIGNATURE_MISMATCH');
      expect(runs).toHaveLength(2);
    });

    it('tolerance edges: exactly 300 s either way is accepted; false accepts t=0', async () => {
      const fixed = 1_800_000_000;
      const { client } = await mount({ now: () => fixed * 1000 + 999 });
      expect((await client.send(delivery(undefined, { timestamp: fixed - 300 }))).status).toBe(200);
      expect((await client.send(delivery(undefined, { timestamp: fixed + 300 }))).status).toBe(200);
      expectError(
        await client.send(delivery(undefined, { timestamp: fixed - 301 })),
        400,
        'TIMESTAMP_OUT_OF_TOLERANCE',
      );
      expectError(
        await client.send(delivery(undefined, { timestamp: fixed + 301 })),
        400,
        'TIMESTAMP_OUT_OF_TOLERANCE',
      );
      const off = await mount({ tolerance: false });
      expect((await off.client.send(delivery(undefined, { timestamp: 0 }))).status).toBe(200);
    });

    it('signature header variations: order, spaces, several v1, v0, upper-case hex, leading zeros', async () => {
      const { client, runs } = await mount();
      const variants = (body: string, t: number): string[] => {
        const v1 = sigOf(body, t).split('v1=')[1] as string;
        return [
          `v1=${v1},t=${t}`,
          `t=${t}, v1=${v1}`,
          `t=${t},v1=${'0'.repeat(64)},v1=${v1}`,
          `t=${t},v1=not-hex,v1=${v1}`,
          `v0=abc,t=${t},v2=zzz,v1=${v1}`,
          `t=${t},v1=${v1.toUpperCase()}`,
        ];
      };
      let n = 0;
      for (let i = 0; i < 6; i++) {
        const d = delivery(createTestEvent('image.created'));
        const header = variants(d.body, nowSeconds())[i] as string;
        const res = await client.send({ ...d, headers: { ...d.headers, 'x-service-signature': header } });
        expect([header, res.status]).toEqual([header, 200]);
        n++;
      }
      const d = delivery(createTestEvent('image.created'));
      const padded = `0${nowSeconds()}`;
      const res = await client.send({
        ...d,
        headers: { ...d.headers, 'x-service-signature': sign(SECRET, d.body, padded) },
      });
      expect(res.status).toBe(200);
      expect(runs).toHaveLength(n + 1);
    });

    it('a __proto__ key in the body pollutes nothing', async () => {
      const { webhooks, client } = await mount();
      let object: Record<string, unknown> | undefined;
      webhooks.on('image.created', (event) => {
        object = event.data.object;
        Object.assign({}, event.data.object);
      });
      const body = `{"id":"evt_proto","type":"image.created","created":1,"data":{"object":{"id":"img_1","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}},"__proto__":{"polluted":true}}`;
      expect((await client.send(signedBody(body))).status).toBe(200);
      expect(object?.id).toBe('img_1');
      expect(Object.getPrototypeOf(object)).toBe(Object.prototype);
      expect(Object.hasOwn(object as object, '__proto__')).toBe(false);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  describe('idempotency', () => {
    it('the same event twice → 200 both times, handlers run once', async () => {
      const { client, runs } = await mount();
      const event = createTestEvent('image.deleted');
      const first = await client.send(delivery(event));
      const second = await client.send(delivery(event));
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(second.json).toEqual({ received: true, duplicate: true });
      expect(runs).toHaveLength(1);
    });

    it('de-duplicates on the signed id, not the delivery header', async () => {
      const { client, runs } = await mount();
      const event = createTestEvent('image.deleted');
      await client.send(delivery(event, { headers: { 'x-service-delivery': 'same' } }));
      await client.send(delivery(createTestEvent('image.deleted'), { headers: { 'x-service-delivery': 'same' } }));
      await client.send(delivery(event, { headers: { 'x-service-delivery': 'other' } }));
      expect(runs).toHaveLength(2);
    });

    it('the same event while the first is still running → 409 IN_FLIGHT, handler not run again', async () => {
      const { webhooks, client } = await mount();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      let runs = 0;
      webhooks.on('image.created', async () => {
        runs++;
        started();
        await gate;
      });
      const event = createTestEvent('image.created');
      const first = client.send(delivery(event));
      await running;
      const second = await client.send(delivery(event));
      expectError(second, 409, 'IN_FLIGHT');
      release();
      expect((await first).status).toBe(200);
      expect((await client.send(delivery(event))).json).toEqual({ received: true, duplicate: true });
      expect(runs).toBe(1);
    });

    it('many concurrent copies of one event → exactly one run, the rest 200 or 409', async () => {
      const { webhooks, client } = await mount();
      let runs = 0;
      webhooks.on('image.created', async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 20));
      });
      const event = createTestEvent('image.created');
      const answers = await Promise.all(Array.from({ length: 20 }, () => client.send(delivery(event))));
      expect(runs).toBe(1);
      for (const res of answers) expect([200, 409]).toContain(res.status);
      expect(answers.filter((r) => r.status === 200 && !(r.json as { duplicate?: boolean }).duplicate)).toHaveLength(1);
    });

    it('a failing handler → 500 HANDLER_FAILED without its message; the retry runs it again', async () => {
      const { webhooks, client, errors } = await mount();
      let attempts = 0;
      const done: string[] = [];
      webhooks.on('api_key.revoked', (event) => {
        attempts++;
        if (attempts === 1) throw new Error('db password hunter2 rejected');
        done.push(event.id);
      });
      const event = createTestEvent('api_key.revoked');
      const first = await client.send(delivery(event));
      expectError(first, 500, 'HANDLER_FAILED');
      expect(first.text).not.toContain('hunter2');
      expect(errors.map((e) => e.code)).toEqual(['HANDLER_FAILED']);
      expect(String((errors[0]?.cause as Error | undefined)?.message)).toContain('hunter2');
      const retry = await client.send(delivery(event));
      expect(retry.status).toBe(200);
      expect(done).toEqual([event.id]);
      expect((await client.send(delivery(event))).json).toEqual({ received: true, duplicate: true });
      expect(attempts).toBe(2);
    });

    it('a rejecting async handler stops the later ones and answers 500', async () => {
      const { webhooks, client } = await mount();
      const order: string[] = [];
      webhooks.on('quota.warned', async () => {
        order.push('a');
        throw new Error('boom');
      });
      webhooks.on('quota.warned', () => void order.push('b'));
      expectError(await client.send(delivery(createTestEvent('quota.warned'))), 500, 'HANDLER_FAILED');
      // onAny (registered first by mount) ran, then a; b never ran.
      expect(order).toEqual(['a']);
    });

    it('a failing store → 503 STORE_UNAVAILABLE, handlers not run; the service retry succeeds later', async () => {
      const store = new BrokenStore();
      const { client, runs, errors } = await mount({ store });
      expectError(await client.send(delivery()), 503, 'STORE_UNAVAILABLE');
      expect(store.calls).toBe(1);
      expect(runs).toHaveLength(0);
      expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
    });

    it('a store that fails to record completion → still 200, onError told', async () => {
      const memory = new MemoryStore();
      const store: IdempotencyStore = {
        claim: (id) => memory.claim(id),
        release: (id) => memory.release(id),
        complete: async () => {
          throw new Error('READONLY You can’t write against a read only replica.');
        },
      };
      const { client, runs, errors } = await mount({ store });
      expect((await client.send(delivery())).status).toBe(200);
      expect(runs).toHaveLength(1);
      expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
    });

    it('store: false turns de-duplication off', async () => {
      const { client, runs } = await mount({ store: false });
      const event = createTestEvent('image.created');
      await client.send(delivery(event));
      await client.send(delivery(event));
      expect(runs).toHaveLength(2);
    });
  });
});
