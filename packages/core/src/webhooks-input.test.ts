import { describe, expect, it, vi } from 'vitest';
import { MemoryStore, Webhooks, type WebhookVerificationError } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_input_test_9f8e7d';

function signed() {
  return createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
}

/** The code of the error `fn` throws, and the error. */
function thrown(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    return error as WebhookVerificationError;
  }
  throw new Error('did not throw');
}

describe('verify() and handle() given what is not a raw body or headers', () => {
  const { body, headers } = signed();
  const notBytes: [string, unknown][] = [
    ['null', null],
    ['undefined', undefined],
    ['a parsed object (express.json() ran first)', JSON.parse(body)],
    ['a Date', new Date()],
    ['a number', 42],
    ['an array', [1, 2, 3]],
  ];

  it.each(notBytes.filter(([, value]) => value !== undefined))(
    'verify(%s) throws RAW_BODY_UNAVAILABLE with the fix',
    (_name, value) => {
      const webhooks = new Webhooks({ secret: SECRET });
      const error = thrown(() => webhooks.verify(value as string, headers));
      expect(error.name).toBe('WebhookVerificationError');
      expect(error.code).toBe('RAW_BODY_UNAVAILABLE');
      expect(error.status).toBe(500);
      expect(error.message).toMatch(/raw body/);
      expect(error.message).toMatch(/express\.raw\(\)/);
    },
  );

  it.each(notBytes.filter(([, value]) => value !== undefined))(
    'verifyAsync(%s) rejects with RAW_BODY_UNAVAILABLE',
    async (_name, value) => {
      const webhooks = new Webhooks({ secret: SECRET });
      await expect(webhooks.verifyAsync(value as string, headers)).rejects.toMatchObject({
        code: 'RAW_BODY_UNAVAILABLE',
      });
    },
  );

  it.each(notBytes.filter(([, value]) => value !== undefined))(
    'handle({ body: %s }) answers 500 RAW_BODY_UNAVAILABLE',
    async (_name, value) => {
      const webhooks = new Webhooks({ secret: SECRET });
      const errors: string[] = [];
      webhooks.onError((error) => void errors.push(error.code));
      const res = await webhooks.handle({ method: 'POST', headers, body: value as string });
      expect(res.status).toBe(500);
      expect(JSON.parse(res.body).error.code).toBe('RAW_BODY_UNAVAILABLE');
      expect(errors).toEqual(['RAW_BODY_UNAVAILABLE']);
    },
  );

  it.each([
    ['null headers', null],
    ['undefined headers', undefined],
    ['a string as headers', 'x-service-signature: t=1'],
    ['a number as headers', 7],
  ])('verify with %s → MISSING_SIGNATURE, handle answers 400', async (_name, value) => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(thrown(() => webhooks.verify(body, value as never)).code).toBe('MISSING_SIGNATURE');
    const res = await webhooks.handle({ method: 'POST', headers: value as never, body });
    expect(res.status).toBe(400);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'POST /webhooks'],
    ['an array', []],
  ])('handle(%s) answers, never rejects', async (_name, value) => {
    const webhooks = new Webhooks({ secret: SECRET });
    const res = await webhooks.handle(value as never);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error.code).toBe('MISSING_SIGNATURE');
  });

  it('a Headers-like whose get() throws, and a clock that throws: 500 INTERNAL_ERROR, never a rejection', async () => {
    const told: string[] = [];
    const tell = (error: { code: string; cause?: unknown }) =>
      void told.push(`${error.code}: ${(error.cause as Error).message}`);
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.onError(tell);
    const broken = {
      get() {
        throw new Error('boom');
      },
    };
    const res = await webhooks.handle({ method: 'POST', headers: broken, body });
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body).error.code).toBe('INTERNAL_ERROR');

    const clockless = new Webhooks({
      secret: SECRET,
      now: () => {
        throw new Error('clock broke');
      },
    });
    clockless.onError(tell);
    const res2 = await clockless.handle({ method: 'POST', headers, body });
    expect(res2.status).toBe(500);
    expect(res2.body).not.toContain('clock broke');
    expect(told).toEqual(['INTERNAL_ERROR: boom', 'INTERNAL_ERROR: clock broke']);
  });
});

describe('onError context of rejected requests', () => {
  it('carries the X-Service-Delivery header as sent, for rejected requests too', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const contexts: { code: string; deliveryId?: string }[] = [];
    webhooks.onError((error, context) => void contexts.push({ code: error.code, deliveryId: context.deliveryId }));
    const { body, headers } = signed();
    await webhooks.handle({ method: 'POST', headers: { ...headers, 'x-service-signature': 't=1,v1=00' }, body });
    await webhooks.handle({ method: 'GET', headers, body });
    const { 'x-service-delivery': _, ...noDelivery } = headers;
    await webhooks.handle({ method: 'POST', headers: { ...noDelivery, 'x-service-signature': 'garbage' }, body });
    expect(contexts).toEqual([
      { code: 'TIMESTAMP_OUT_OF_TOLERANCE', deliveryId: headers['x-service-delivery'] },
      { code: 'METHOD_NOT_ALLOWED', deliveryId: headers['x-service-delivery'] },
      { code: 'MALFORMED_SIGNATURE', deliveryId: undefined },
    ]);
  });
});

describe('failures nobody listens for', () => {
  it('with no onError listener, handler and store failures go to console.error with their cause; rejections do not', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const webhooks = new Webhooks({ secret: SECRET });
      const cause = new Error('thumbnail service said no');
      webhooks.on('image.created', () => {
        throw cause;
      });
      const delivery = signed();
      expect((await webhooks.handle(delivery)).status).toBe(500);
      expect(spy).toHaveBeenCalledTimes(1);
      const [line, logged] = spy.mock.calls[0] as [string, unknown];
      expect(line).toMatch(/^pixhook: HANDLER_FAILED \(image\.created evt_/);
      expect(line).toContain(delivery.headers['x-service-delivery']);
      expect(logged).toBe(cause);
      expect(line).not.toContain(SECRET);

      // Anyone can send garbage: a 400 is not logged.
      await webhooks.handle({ method: 'POST', headers: {}, body: '{}' });
      expect(spy).toHaveBeenCalledTimes(1);

      // Once a listener is registered, it alone is told.
      webhooks.onError(() => {});
      await webhooks.handle(signed());
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('secrets are private', () => {
  it('no reflection reaches them', async () => {
    const { inspect } = await import('node:util');
    const webhooks = new Webhooks({ secret: [SECRET, 'whsec_second_secret_77'], store: new MemoryStore() });
    const views = [
      inspect(webhooks, { showHidden: true, customInspect: false, depth: 10 }),
      inspect(webhooks, { showHidden: true, depth: 10 }),
      JSON.stringify(Object.getOwnPropertyDescriptors(webhooks)),
      String(Object.getOwnPropertyNames(webhooks)),
      String(Reflect.ownKeys(webhooks).map(String)),
      JSON.stringify((webhooks as unknown as { options?: unknown }).options ?? null),
    ];
    for (const view of views) {
      expect(view).not.toContain(SECRET);
      expect(view).not.toContain('whsec_second_secret_77');
    }
  });
});
