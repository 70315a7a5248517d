import { describe, expect, it } from 'vitest';
import {
  type BodyReader,
  type IdempotencyStore,
  MemoryStore,
  Webhooks,
  type WebhooksOptions,
  WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_handle_test_3c2b1a';

function setup(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const runs: string[] = [];
  const errors: WebhookVerificationError[] = [];
  webhooks.onAny((event) => void runs.push(event.id));
  webhooks.onError((error) => void errors.push(error));
  return { webhooks, runs, errors };
}

function signed(type = 'image.created') {
  const event = createTestEvent(type);
  return { event, ...createSignedRequest(event, { secret: SECRET }) };
}

const json = (body: string) => JSON.parse(body) as { received?: boolean; error?: { code: string; message: string } };

/** A body reader that counts its calls. */
function reader(value: () => Promise<Uint8Array | string>) {
  const calls: number[] = [];
  const read: BodyReader = (limit) => {
    calls.push(limit);
    return value();
  };
  return { read, calls };
}

describe('webhooks.handle() without an adapter', () => {
  it('a method left out is taken as POST', async () => {
    const { webhooks, runs } = setup();
    const { event, body, headers } = signed();
    const res = await webhooks.handle({ headers, body });
    expect(res).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: '{"received":true}',
    });
    expect(runs).toEqual([event.id]);
  });

  it.each(['GET', 'PUT', 'HEAD', 'OPTIONS', 'post'])('method %s → 405 with Allow: POST, body not read', async (m) => {
    const { webhooks, runs } = setup();
    const { body, headers } = signed();
    const { read, calls } = reader(async () => body);
    const res = await webhooks.handle({ method: m, headers, body: read });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(json(res.body).error?.code).toBe('METHOD_NOT_ALLOWED');
    expect(calls).toEqual([]);
    expect(runs).toEqual([]);
  });

  it.each([
    ['a string', (b: string) => b],
    ['a Buffer', (b: string) => Buffer.from(b)],
    ['a plain Uint8Array', (b: string) => new TextEncoder().encode(b)],
    ['a Uint8Array view into a larger buffer', (b: string) => new TextEncoder().encode(`xx${b}yy`).subarray(2, -2)],
  ])('takes the body as %s', async (_name, as) => {
    const { webhooks, runs } = setup();
    const { event, body, headers } = signed();
    expect((await webhooks.handle({ method: 'POST', headers, body: as(body) })).status).toBe(200);
    expect(runs).toEqual([event.id]);
  });

  it('takes a reader function, called once with maxBodyBytes', async () => {
    const { webhooks, runs } = setup({ maxBodyBytes: 4096 });
    const { event, body, headers } = signed();
    const { read, calls } = reader(async () => Buffer.from(body));
    expect((await webhooks.handle({ method: 'POST', headers, body: read })).status).toBe(200);
    expect(calls).toEqual([4096]);
    expect(runs).toEqual([event.id]);
  });

  it('a reader may return a string', async () => {
    const { webhooks } = setup();
    const { body, headers } = signed();
    expect((await webhooks.handle({ headers, body: async () => body })).status).toBe(200);
  });

  it('no body at all → MISSING_SIGNATURE without a signature, INVALID_JSON with one', async () => {
    const { webhooks } = setup();
    expect(json((await webhooks.handle({ headers: {} })).body).error?.code).toBe('MISSING_SIGNATURE');
    const { headers } = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const { sign } = await import('./index.js');
    const res = await webhooks.handle({ headers: { ...headers, 'x-service-signature': sign(SECRET, '') } });
    expect(json(res.body).error?.code).toBe('INVALID_JSON');
  });

  it.each([
    ['a Node header object', (h: Record<string, string>) => h],
    ['a Headers instance', (h: Record<string, string>) => new Headers(h)],
  ])('Content-Length above the limit → 413 without calling the reader (%s)', async (_name, as) => {
    const { webhooks, errors } = setup({ maxBodyBytes: 100 });
    const { headers } = signed();
    const { read, calls } = reader(async () => 'x');
    const res = await webhooks.handle({
      method: 'POST',
      headers: as({ ...headers, 'content-length': '101' }),
      body: read,
    });
    expect(res.status).toBe(413);
    expect(json(res.body).error?.code).toBe('PAYLOAD_TOO_LARGE');
    expect(json(res.body).error?.message).toContain('100 bytes');
    expect(calls).toEqual([]);
    expect(errors.map((e) => e.code)).toEqual(['PAYLOAD_TOO_LARGE']);
  });

  it('a Content-Length at the limit is read', async () => {
    const { webhooks } = setup();
    const { body, headers } = signed();
    const limit = Buffer.byteLength(body);
    const exact = new Webhooks({ secret: SECRET, maxBodyBytes: limit });
    const { read, calls } = reader(async () => body);
    const res = await exact.handle({ headers: { ...headers, 'content-length': String(limit) }, body: read });
    expect(res.status).toBe(200);
    expect(calls).toEqual([limit]);
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
  });

  it('a body over the limit → 413 whatever Content-Length says', async () => {
    const { webhooks } = setup({ maxBodyBytes: 64 });
    const { body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(413);
    expect((await webhooks.handle({ headers: { ...headers, 'content-length': '10' }, body })).status).toBe(413);
    expect((await webhooks.handle({ headers, body: async () => Buffer.from(body) })).status).toBe(413);
  });

  it.each([
    ['an Error', () => Promise.reject(new Error('aborted'))],
    [
      'a TypeError thrown synchronously',
      () => {
        throw new TypeError('stream is not readable');
      },
    ],
    ['a non-Error', () => Promise.reject('socket hang up')],
  ])('a reader that throws %s → 400 BODY_UNREADABLE, cause kept for onError', async (_name, failing) => {
    const { webhooks, errors, runs } = setup();
    const { headers } = signed();
    const res = await webhooks.handle({ headers, body: failing as BodyReader });
    expect(res.status).toBe(400);
    expect(json(res.body).error?.code).toBe('BODY_UNREADABLE');
    expect(errors[0]?.code).toBe('BODY_UNREADABLE');
    expect(errors[0]?.cause).toBeDefined();
    expect(runs).toEqual([]);
  });

  it.each([
    [
      'Fastify',
      Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }),
    ],
    ['raw-body', Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413 })],
  ])(
    "a framework reader's own too-large error (%s) → 413 PAYLOAD_TOO_LARGE; the method still comes first",
    async (_name, tooLarge) => {
      const { webhooks, errors } = setup();
      const { headers } = signed();
      const res = await webhooks.handle({ headers, body: () => Promise.reject(tooLarge) });
      expect([res.status, json(res.body).error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
      expect(errors[0]?.code).toBe('PAYLOAD_TOO_LARGE');
      const put = await webhooks.handle({ method: 'PUT', headers, body: () => Promise.reject(tooLarge) });
      expect(put.status).toBe(405);
    },
  );

  it("a reader's own pixhook error is answered as it is", async () => {
    const { webhooks } = setup();
    const { headers } = signed();
    const res = await webhooks.handle({
      headers,
      body: async () => {
        throw new WebhookVerificationError('RAW_BODY_UNAVAILABLE', 'A parser ate the body; mount pixhook first.');
      },
    });
    expect(res.status).toBe(500);
    expect(json(res.body).error).toEqual({
      code: 'RAW_BODY_UNAVAILABLE',
      message: 'A parser ate the body; mount pixhook first.',
    });
  });

  it.each([
    [
      'an Error subclass without toJSON',
      () =>
        Object.assign(new Error('Too big for this endpoint.'), {
          name: 'WebhookVerificationError',
          code: 'PAYLOAD_TOO_LARGE',
          status: 413,
        }),
    ],
    [
      'a plain object',
      () => ({ name: 'WebhookVerificationError', code: 'PAYLOAD_TOO_LARGE', message: 'Too big for this endpoint.' }),
    ],
  ])(
    "a reader's error from another copy of core (%s) is answered with its code, never a rejection",
    async (_name, make) => {
      const { webhooks, errors } = setup();
      const { headers } = signed();
      const res = await webhooks.handle({
        headers,
        body: async () => {
          throw make();
        },
      });
      expect(res.status).toBe(413);
      expect(json(res.body).error).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: 'Too big for this endpoint.' });
      expect(errors.map((e) => e.code)).toEqual(['PAYLOAD_TOO_LARGE']);
    },
  );

  it('passes request through to onError for rejected requests', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const requests: unknown[] = [];
    webhooks.onError((_e, context) => void requests.push(context.request));
    const request = { tag: 'req' };
    await webhooks.handle({ method: 'GET', headers: {}, request });
    expect(requests).toEqual([request]);
  });
});

describe('webhooks.handle() and the store', () => {
  it('no handlers registered: 200 without asking the store', async () => {
    let claims = 0;
    const store: IdempotencyStore = {
      claim: async () => {
        claims++;
        return 'claimed';
      },
      complete: async () => {},
      release: async () => {},
    };
    const webhooks = new Webhooks({ secret: SECRET, store });
    const { body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect(claims).toBe(0);
  });

  it('a duplicate of a completed event → 200 duplicate, handlers not run', async () => {
    const { webhooks, runs } = setup();
    const { body, headers } = signed();
    await webhooks.handle({ headers, body });
    const again = await webhooks.handle({ headers, body });
    expect(again.status).toBe(200);
    expect(json(again.body)).toEqual({ received: true, duplicate: true });
    expect(runs).toHaveLength(1);
  });

  it('a duplicate while the first still runs → 409 IN_FLIGHT', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    let release: () => void = () => {};
    let runs = 0;
    webhooks.on('image.created', async () => {
      runs++;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    const { body, headers } = signed();
    const first = webhooks.handle({ headers, body });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await webhooks.handle({ headers, body });
    expect(second.status).toBe(409);
    expect(json(second.body).error?.code).toBe('IN_FLIGHT');
    release();
    expect((await first).status).toBe(200);
    expect(runs).toBe(1);
  });

  it('store false: every delivery runs the handlers', async () => {
    const { webhooks, runs } = setup({ store: false });
    const { body, headers } = signed();
    await webhooks.handle({ headers, body });
    await webhooks.handle({ headers, body });
    expect(runs).toHaveLength(2);
  });

  it('a full MemoryStore → 503 STORE_UNAVAILABLE, handlers not run', async () => {
    const store = new MemoryStore({ maxEntries: 1 });
    await store.claim('evt_busy');
    const { webhooks, runs, errors } = setup({ store });
    const { body, headers } = signed();
    const res = await webhooks.handle({ headers, body });
    expect(res.status).toBe(503);
    expect(json(res.body).error?.code).toBe('STORE_UNAVAILABLE');
    expect(runs).toEqual([]);
    expect(errors[0]?.cause).toBeInstanceOf(Error);
  });

  it.each([
    ['answers something else', async () => 'yes'],
    [
      'throws synchronously',
      () => {
        throw new Error('no connection');
      },
    ],
  ])('a store whose claim %s → 503', async (_name, claim) => {
    const store = { claim, complete: async () => {}, release: async () => {} } as unknown as IdempotencyStore;
    const { webhooks, runs } = setup({ store });
    const { body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(503);
    expect(runs).toEqual([]);
  });

  it('complete failing after the handlers succeeded → still 200, onError told', async () => {
    const store: IdempotencyStore = {
      claim: async () => 'claimed',
      complete: async () => {
        throw new Error('write failed');
      },
      release: async () => {},
    };
    const { webhooks, runs, errors } = setup({ store });
    const { body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect(runs).toHaveLength(1);
    expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
  });

  it('a failed handler releases the claim; release failing is reported and the answer stays 500', async () => {
    const calls: string[] = [];
    const store: IdempotencyStore = {
      claim: async (id) => {
        calls.push(`claim ${id}`);
        return 'claimed';
      },
      complete: async (id) => void calls.push(`complete ${id}`),
      release: async (id) => {
        calls.push(`release ${id}`);
        throw new Error('release failed');
      },
    };
    const webhooks = new Webhooks({ secret: SECRET, store });
    const errors: string[] = [];
    webhooks.onError((e) => void errors.push(e.code));
    webhooks.on('image.created', () => {
      throw new Error('boom');
    });
    const { event, body, headers } = signed();
    const res = await webhooks.handle({ headers, body });
    expect(res.status).toBe(500);
    expect(calls).toEqual([`claim ${event.id}`, `release ${event.id}`]);
    expect(errors).toEqual(['STORE_UNAVAILABLE', 'HANDLER_FAILED']);
  });

  it('claims on the signed event id', async () => {
    const ids: string[] = [];
    const store: IdempotencyStore = {
      claim: async (id) => {
        ids.push(id);
        return 'claimed';
      },
      complete: async () => {},
      release: async () => {},
    };
    const { webhooks } = setup({ store });
    const { event, body, headers } = signed();
    await webhooks.handle({ headers: { ...headers, 'x-service-delivery': 'evt_not_this' }, body });
    expect(ids).toEqual([event.id]);
  });
});
