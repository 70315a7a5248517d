import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, Webhooks, type WebhookVerificationError } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_dispatch_test_1f2e3d';

function deliver(webhooks: Webhooks, type: string, request?: unknown) {
  const { body, headers } = createSignedRequest(createTestEvent(type), { secret: SECRET });
  return webhooks.handle({ method: 'POST', headers, body, request });
}

const codeOf = (body: string): unknown => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

describe('on()', () => {
  it.each([
    ['an unknown type', 'bogus.type'],
    ['a type in another case', 'Image.Created'],
    ['an empty type', ''],
  ])('throws for %s, naming the known types and onAny', (_name, type) => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(() => webhooks.on(type as never, () => {})).toThrow(TypeError);
    expect(() => webhooks.on(type as never, () => {})).toThrow(/image\.created.*onAny/);
  });

  it('throws for an empty list', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(() => webhooks.on([], () => {})).toThrow(/at least one event type/);
  });

  it('a list with one unknown type registers nothing', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen: string[] = [];
    expect(() => webhooks.on(['image.created', 'nope.nope'] as never, () => void seen.push('ran'))).toThrow(TypeError);
    expect((await deliver(webhooks, 'image.created')).status).toBe(200);
    expect(seen).toEqual([]);
  });

  it.each([
    ['on', (w: Webhooks) => w.on('image.created', 'nope' as never)],
    ['onAny', (w: Webhooks) => w.onAny(undefined as never)],
    ['onError', (w: Webhooks) => w.onError({} as never)],
  ])('%s without a function throws', (_name, register) => {
    expect(() => register(new Webhooks({ secret: SECRET }))).toThrow(TypeError);
  });

  it('returns the instance for chaining', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(webhooks.on('image.created', () => {})).toBe(webhooks);
    expect(webhooks.onAny(() => {})).toBe(webhooks);
    expect(webhooks.onError(() => {})).toBe(webhooks);
  });

  it('accepts every known type, each handler only for its own type', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen: string[] = [];
    for (const type of EVENT_TYPES) webhooks.on(type, (event) => void seen.push(`${type}:${event.type}`));
    for (const type of EVENT_TYPES) expect((await deliver(webhooks, type)).status).toBe(200);
    expect(seen).toEqual(EVENT_TYPES.map((type) => `${type}:${type}`));
  });

  it('runs a handler registered for a list once per event, even if a type is repeated', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    let runs = 0;
    webhooks.on(['image.created', 'image.created', 'image.deleted'], () => void runs++);
    await deliver(webhooks, 'image.created');
    await deliver(webhooks, 'image.deleted');
    await deliver(webhooks, 'quota.warned');
    expect(runs).toBe(2);
  });

  it('runs the same function twice when it is registered twice', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    let runs = 0;
    const handler = () => void runs++;
    webhooks.on('image.created', handler).on('image.created', handler);
    await deliver(webhooks, 'image.created');
    expect(runs).toBe(2);
  });
});

describe('handler order', () => {
  function interleaved() {
    const webhooks = new Webhooks({ secret: SECRET });
    const order: string[] = [];
    webhooks.onAny(() => void order.push('any1'));
    webhooks.on('image.created', () => void order.push('created1'));
    webhooks.onAny(() => void order.push('any2'));
    webhooks.on(['image.created', 'quota.warned'], () => void order.push('list'));
    webhooks.on('quota.warned', () => void order.push('warned'));
    webhooks.onAny(() => void order.push('any3'));
    return { webhooks, order };
  }

  it('on and onAny interleaved run in registration order', async () => {
    const { webhooks, order } = interleaved();
    await deliver(webhooks, 'image.created');
    expect(order).toEqual(['any1', 'created1', 'any2', 'list', 'any3']);
  });

  it('a type first registered after some onAny handlers still sees them first', async () => {
    const { webhooks, order } = interleaved();
    await deliver(webhooks, 'quota.warned');
    expect(order).toEqual(['any1', 'any2', 'list', 'warned', 'any3']);
  });

  it('types without their own handlers, known or not, get the onAny handlers in order', async () => {
    const { webhooks, order } = interleaved();
    await deliver(webhooks, 'api_key.revoked');
    await deliver(webhooks, 'image.resized');
    expect(order).toEqual(['any1', 'any2', 'any3', 'any1', 'any2', 'any3']);
  });

  it('runs async handlers one after another, each awaited', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const order: string[] = [];
    webhooks.on('image.created', async () => {
      order.push('slow:start');
      await new Promise((resolve) => setTimeout(resolve, 20));
      order.push('slow:end');
    });
    webhooks.onAny(() => void order.push('next'));
    const res = await deliver(webhooks, 'image.created');
    expect(res.status).toBe(200);
    expect(order).toEqual(['slow:start', 'slow:end', 'next']);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('db down: password=hunter2');
      },
    ],
    [
      'rejects',
      async () => {
        throw new Error('db down: password=hunter2');
      },
    ],
    [
      'throws a non-Error',
      () => {
        throw 'db down: password=hunter2';
      },
    ],
  ])('the first handler that %s stops the rest; 500 without its message; onError gets it as cause', async (_n, bad) => {
    const webhooks = new Webhooks({ secret: SECRET });
    const order: string[] = [];
    const errors: WebhookVerificationError[] = [];
    webhooks.onAny(() => void order.push('first'));
    webhooks.on('image.created', () => {
      order.push('failing');
      return bad();
    });
    webhooks.onAny(() => void order.push('never'));
    webhooks.onError((error) => void errors.push(error));
    const res = await deliver(webhooks, 'image.created');
    expect(res.status).toBe(500);
    expect(codeOf(res.body)).toBe('HANDLER_FAILED');
    expect(res.body).not.toContain('hunter2');
    expect(order).toEqual(['first', 'failing']);
    expect(errors.map((e) => e.code)).toEqual(['HANDLER_FAILED']);
    expect(String((errors[0]?.cause as Error)?.message ?? errors[0]?.cause)).toContain('hunter2');
  });

  it('a failed event runs all its handlers again on the next delivery', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const order: string[] = [];
    let fail = true;
    webhooks.on('image.created', () => void order.push('a'));
    webhooks.on('image.created', () => {
      order.push('b');
      if (fail) throw new Error('transient');
    });
    const errors: string[] = [];
    webhooks.onError((error) => void errors.push(error.code));
    const { body, headers } = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    expect((await webhooks.handle({ headers, body })).status).toBe(500);
    expect(errors).toEqual(['HANDLER_FAILED']);
    fail = false;
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect(order).toEqual(['a', 'b', 'a', 'b']);
  });
});

describe('handler context', () => {
  it('gets deliveryId, timestamp and the request as passed', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const contexts: unknown[] = [];
    webhooks.onAny((_event, context) => void contexts.push(context));
    const request = { marker: Symbol('req') };
    // Read once: the clock read again after handle() may have ticked to the next second.
    const timestamp = Math.floor(Date.now() / 1000) - 7;
    const { body, headers } = createSignedRequest(createTestEvent('image.created'), {
      secret: SECRET,
      timestamp,
      deliveryId: 'dlv_1234',
    });
    await webhooks.handle({ headers, body, request });
    expect(contexts).toEqual([{ deliveryId: 'dlv_1234', timestamp, request, secret: { index: 0 } }]);
    expect((contexts[0] as { request: unknown }).request).toBe(request);
  });
});

describe('onError()', () => {
  it('is told of rejected requests with the request and no event', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen: unknown[] = [];
    webhooks.onError((error, context) => void seen.push([error.code, context]));
    const request = { id: 1 };
    await webhooks.handle({ headers: {}, body: '{}', request });
    expect(seen).toEqual([['MISSING_SIGNATURE', { request }]]);
  });

  it('a listener that throws is ignored: the answer stands and later listeners still run', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen: string[] = [];
    webhooks.onError(() => {
      throw new Error('broken logger');
    });
    webhooks.onError((error) => void seen.push(error.code));
    webhooks.on('image.created', () => {
      throw new Error('boom');
    });
    const rejected = await webhooks.handle({ headers: {}, body: '{}' });
    expect(rejected.status).toBe(400);
    const failed = await deliver(webhooks, 'image.created');
    expect(failed.status).toBe(500);
    expect(seen).toEqual(['MISSING_SIGNATURE', 'HANDLER_FAILED']);
  });

  it('a listener that rejects is ignored (no unhandled rejection)', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    let calls = 0;
    webhooks.onError(async () => {
      calls++;
      throw new Error('async broken logger');
    });
    const res = await webhooks.handle({ headers: {}, body: '{}' });
    expect(res.status).toBe(400);
    expect(calls).toBe(1);
    // Give an unhandled rejection the chance to surface; vitest fails the run if one does.
    await new Promise((resolve) => setTimeout(resolve, 10));
  });
});
