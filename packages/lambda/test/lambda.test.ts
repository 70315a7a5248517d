/**
 * What only the Lambda handler does, for each event source: reading the event's body (text or
 * base64) and headers (`headers` and `multiValueHeaders`, any case), the result shape, the event
 * and context as `context.request`, and events it must not answer. The shared contract table
 * (test/contract.test.ts) runs every other row against each source.
 */
import {
  type HandlerContext,
  sign,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { createLambdaHandler, type LambdaHttpEvent, type LambdaRequest } from '@pixhook/lambda';
import { delivery, errorCode, nowSeconds, SECRET, signedBody } from '@pixhook/test-helpers/deliveries';
import { lambdaContext } from '@pixhook/test-helpers/lambda-context';
import { brokenTenantOptions, expectNoUnhandledRejection } from '@pixhook/test-helpers/tenants';
import type { ALBEvent, APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { type EventInput, eventFor, readResult, SHAPES, type Shape } from './helpers/events.js';

function setup(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks<Record<string, object>, LambdaRequest>({ secret: SECRET, ...options });
  const runs: { event: { id: string; data: { object: object } }; context: HandlerContext<LambdaRequest> }[] = [];
  const errors: WebhookVerificationError[] = [];
  webhooks.onAny((event, context) => void runs.push({ event, context }));
  webhooks.onError((error) => void errors.push(error));
  const handler = createLambdaHandler(webhooks);
  return { webhooks, handler, runs, errors };
}

/** Invokes `handler` with `event` and reads the result, which must have the shape `shape` expects. */
async function invoke(handler: ReturnType<typeof createLambdaHandler>, shape: Shape, event: LambdaHttpEvent) {
  return readResult(shape, await handler(event, lambdaContext()));
}

/** A delivery of `body` (any bytes), signed correctly. */
const signed = (body: string | Uint8Array): EventInput & { headers: Record<string, string> } => ({
  ...signedBody(body),
  body,
});

const send = (handler: ReturnType<typeof createLambdaHandler>, shape: Shape, input: EventInput) =>
  invoke(handler, shape, eventFor(shape, input));

/** `text` as UTF-8 bytes with `bytes` (not UTF-8) in place of its "#". */
function withBytes(text: string, ...bytes: number[]): Uint8Array {
  const [head, tail] = text.split('#') as [string, string];
  return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
}

describe.each(SHAPES)('createLambdaHandler: %s', (shape) => {
  it('a valid delivery → 200; handlers get the invocation event and context as context.request', async () => {
    const { handler, runs } = setup();
    const d = delivery();
    const event = eventFor(shape, d);
    const context = lambdaContext();
    const result = readResult(shape, await handler(event, context));
    expect([result.status, result.json]).toEqual([200, { received: true }]);
    expect(result.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(runs).toHaveLength(1);
    expect(runs[0]?.context.request?.event).toBe(event);
    expect(runs[0]?.context.request?.context).toBe(context);
    expect(Object.keys(runs[0]?.context.request ?? {}).sort()).toEqual(['context', 'event']);
    expect(runs[0]?.context.deliveryId).toBe(d.headers['x-service-delivery']);
  });

  it('a JSON body sent base64 (isBase64Encoded) is decoded to its bytes and verifies', async () => {
    const { handler, runs } = setup();
    const d = delivery();
    const event = eventFor(shape, { ...d, base64: true });
    expect(event.isBase64Encoded).toBe(true);
    expect(event.body).toBe(Buffer.from(d.body).toString('base64'));
    expect((await invoke(handler, shape, event)).status).toBe(200);
    expect(runs.map((run) => run.event.id)).toEqual([JSON.parse(d.body).id]);
  });

  it.each([false, true])('a non-ASCII body verifies over its UTF-8 bytes (base64: %s)', async (base64) => {
    const { handler, runs } = setup();
    const event = createTestEvent('image.created', { id: 'img_1', filename: 'café 🖼.png' });
    expect((await send(handler, shape, { ...delivery(event), base64 })).status).toBe(200);
    expect(runs[0]?.event.data.object).toEqual({ id: 'img_1', filename: 'café 🖼.png' });
  });

  it('a body that is not UTF-8 verifies over its bytes when base64 (then is refused as JSON)', async () => {
    const { handler, errors } = setup();
    const bytes = withBytes(JSON.stringify(createTestEvent('image.created', { name: '#' })), 0xff, 0xfe);
    const event = eventFor(shape, signed(bytes));
    expect(event.isBase64Encoded).toBe(true);
    const result = await invoke(handler, shape, event);
    // The signature held: the answer is the next check's. Decoded text signed instead does not verify.
    expect([result.status, errorCode(result.json)]).toEqual([400, 'INVALID_JSON']);
    const asText = signed(Buffer.from(bytes).toString('utf8'));
    const mismatch = await send(handler, shape, { ...asText, body: bytes });
    expect(errorCode(mismatch.json)).toBe('SIGNATURE_MISMATCH');
    expect(errors.map((error) => error.code)).toEqual(['INVALID_JSON', 'SIGNATURE_MISMATCH']);
  });

  it('header names in any case are read', async () => {
    const { handler, runs } = setup();
    const d = delivery();
    const headers = Object.fromEntries(Object.entries(d.headers).map(([name, value]) => [name.toUpperCase(), value]));
    const event = eventFor(shape, { ...d, headers });
    // Build the event with the names as sent, even where AWS would lower-case them.
    for (const field of ['headers', 'multiValueHeaders'] as const) {
      const given = (event as Partial<Record<typeof field, Record<string, unknown>>>)[field];
      if (given) {
        (event as unknown as Record<string, unknown>)[field] = Object.fromEntries(
          Object.entries(given).map(([name, value]) => [name.toUpperCase(), value]),
        );
      }
    }
    expect((await invoke(handler, shape, event)).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('the same header under two cases is joined, not one dropped: two signatures are malformed', async () => {
    const { handler, runs } = setup();
    const d = delivery();
    const signature = d.headers['x-service-signature'] as string;
    const event = eventFor(shape, d) as Partial<Record<'headers' | 'multiValueHeaders', Record<string, unknown>>>;
    // A valid signature under one name and a forged one under another case of it.
    const forged = `t=${nowSeconds()},v1=${'0'.repeat(64)}`;
    if (event.headers)
      Object.assign(event.headers, { 'X-Service-Signature': forged, 'x-service-signature': signature });
    if (event.multiValueHeaders) {
      Object.assign(event.multiValueHeaders, { 'X-Service-Signature': [forged], 'x-service-signature': [signature] });
    }
    const result = await invoke(handler, shape, event as LambdaHttpEvent);
    expect([result.status, errorCode(result.json)]).toEqual([400, 'MALFORMED_SIGNATURE']);
    expect(runs).toHaveLength(0);
  });

  it('413 PAYLOAD_TOO_LARGE from the body size, as text and as base64, without a Content-Length', async () => {
    const { handler, runs, errors } = setup({ maxBodyBytes: 1024 });
    const big = signed(JSON.stringify(createTestEvent('image.created', { pad: 'x'.repeat(2000) })));
    for (const base64 of [false, true]) {
      const result = await send(handler, shape, { ...big, base64 });
      expect([base64, result.status, errorCode(result.json)]).toEqual([base64, 413, 'PAYLOAD_TOO_LARGE']);
    }
    // Refused from the base64 length before it is decoded or checked: not an "invalid base64" 400.
    const event = eventFor(shape, { ...big, base64: true });
    event.body = `${'!'.repeat(4096)}`;
    expect(errorCode((await invoke(handler, shape, event)).json)).toBe('PAYLOAD_TOO_LARGE');
    expect(runs).toHaveLength(0);
    expect(errors.every((error) => error.code === 'PAYLOAD_TOO_LARGE')).toBe(true);
  });

  it.each([0, 1, 2])(
    'a body of exactly maxBodyBytes is accepted and one byte more refused (text and base64, %i of padding)',
    async (pad) => {
      // JSON may end in white space: three lengths cover every base64 padding.
      const body = `${JSON.stringify(createTestEvent('image.created'))}${' '.repeat(pad)}`;
      const size = Buffer.byteLength(body);
      for (const base64 of [false, true]) {
        const exact = setup({ maxBodyBytes: size });
        expect((await send(exact.handler, shape, { ...signed(body), base64 })).status).toBe(200);
        const under = setup({ maxBodyBytes: size - 1 });
        expect((await send(under.handler, shape, { ...signed(body), base64 })).status).toBe(413);
      }
    },
  );

  it('a declared Content-Length over the limit → 413 without a Connection header for the platform', async () => {
    const { handler } = setup({ maxBodyBytes: 64 });
    const d = delivery();
    const result = await send(handler, shape, { ...d, headers: { ...d.headers, 'content-length': '5000' } });
    expect([result.status, errorCode(result.json)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect(result.headers.connection).toBeUndefined();
  });

  it('the same event twice → 200 both times, the handler runs once', async () => {
    const { handler, runs } = setup();
    const event = createTestEvent('image.deleted');
    const first = await send(handler, shape, delivery(event));
    const second = await send(handler, shape, delivery(event));
    expect([first.json, second.json]).toEqual([{ received: true }, { received: true, duplicate: true }]);
    expect(runs).toHaveLength(1);
  });

  it('a handler that throws → 500 HANDLER_FAILED, and the retry runs it again', async () => {
    const { webhooks, handler } = setup();
    let attempts = 0;
    webhooks.on('quota.exceeded', () => {
      attempts++;
      if (attempts === 1) throw new Error('downstream unavailable');
    });
    const event = createTestEvent('quota.exceeded');
    const failed = await send(handler, shape, delivery(event));
    expect([failed.status, errorCode(failed.json)]).toEqual([500, 'HANDLER_FAILED']);
    expect(failed.text).not.toContain('downstream');
    expect((await send(handler, shape, delivery(event))).json).toEqual({ received: true });
    expect(attempts).toBe(2);
  });

  it('GET → 405 with Allow: POST, in the header form the source expects', async () => {
    const { handler } = setup();
    const raw = await handler(eventFor(shape, { method: 'GET' }), lambdaContext());
    const result = readResult(shape, raw);
    expect([result.status, result.headers.allow, errorCode(result.json)]).toEqual([405, 'POST', 'METHOD_NOT_ALLOWED']);
    if (shape === 'alb-multi-value') expect(raw).toMatchObject({ multiValueHeaders: { allow: ['POST'] } });
    else expect(raw).toMatchObject({ headers: { allow: 'POST' } });
    if (shape.startsWith('alb')) expect(raw).toMatchObject({ statusDescription: '405 Method Not Allowed' });
  });

  it('a body a parser already turned into an object → 500 RAW_BODY_UNAVAILABLE naming the cause', async () => {
    const { handler, runs } = setup();
    const d = delivery();
    const event = eventFor(shape, d) as unknown as Record<string, unknown>;
    event.body = JSON.parse(d.body);
    const result = await invoke(handler, shape, event as unknown as LambdaHttpEvent);
    expect([result.status, errorCode(result.json)]).toEqual([500, 'RAW_BODY_UNAVAILABLE']);
    expect(result.text).toContain('http-json-body-parser');
    expect(runs).toHaveLength(0);
  });

  it('isBase64Encoded with a body that is not base64 → 400 BODY_UNREADABLE', async () => {
    const { handler } = setup();
    const d = delivery();
    const event = eventFor(shape, { ...d, base64: true });
    event.body = d.body;
    const result = await invoke(handler, shape, event);
    expect([result.status, errorCode(result.json)]).toEqual([400, 'BODY_UNREADABLE']);
  });
});

describe('several values of one header', () => {
  // ALB with multi-value headers off passes only the last value; every other source passes them all.
  it.each(SHAPES.filter((shape) => shape !== 'alb'))(
    '%s: X-Service-Signature sent twice → 400 MALFORMED_SIGNATURE, as on the Node adapters',
    async (shape) => {
      const { handler, runs } = setup();
      const d = delivery();
      const signature = d.headers['x-service-signature'] as string;
      const result = await send(handler, shape, {
        ...d,
        headers: { ...d.headers, 'x-service-signature': [signature, signature] },
      });
      expect([result.status, errorCode(result.json)]).toEqual([400, 'MALFORMED_SIGNATURE']);
      expect(runs).toHaveLength(0);
    },
  );

  it('rest-v1: the values in multiValueHeaders count, not only the last one in headers', async () => {
    const { handler } = setup();
    const d = delivery();
    const event = eventFor('rest-v1', d) as APIGatewayProxyEvent;
    const signature = d.headers['x-service-signature'] as string;
    event.multiValueHeaders['x-service-signature'] = [`t=${nowSeconds()},v1=${'0'.repeat(64)}`, signature];
    expect(event.headers['x-service-signature']).toBe(signature);
    expect(errorCode((await invoke(handler, 'rest-v1', event)).json)).toBe('MALFORMED_SIGNATURE');
  });

  it('alb-multi-value: an event with only multiValueHeaders (no headers) is read and answered in kind', async () => {
    const { handler, runs } = setup();
    const event = eventFor('alb-multi-value', delivery()) as ALBEvent;
    expect(event.headers).toBeUndefined();
    const raw = await handler(event, lambdaContext());
    expect(raw).toEqual({
      statusCode: 200,
      statusDescription: '200 OK',
      multiValueHeaders: { 'content-type': ['application/json; charset=utf-8'] },
      body: '{"received":true}',
      isBase64Encoded: false,
    });
    expect(runs).toHaveLength(1);
  });
});

describe('events that are not an HTTP request', () => {
  const sqs = {
    Records: [{ messageId: '059f36b4-87a3-44ab-83d2-661975830a7d', body: 'Test message.', eventSource: 'aws:sqs' }],
  };
  const websocket = {
    requestContext: { routeKey: '$connect', eventType: 'CONNECT', connectionId: 'abc=' },
    isBase64Encoded: false,
  };
  it.each([
    ['an SQS batch', sqs, /an object with keys "Records"/],
    ['an empty direct invoke', {}, /an empty object/],
    ['null', null, /with null,/],
    ['no event', undefined, /no event \(undefined\)/],
    ['a string', 'hello', /a string of 5 characters/],
    ['an API Gateway WebSocket event', websocket, /keys "requestContext", "isBase64Encoded"/],
    ['an HTTP API 2.0 event without requestContext.http', { version: '2.0', requestContext: {} }, /"version"/],
  ])('%s → the invocation fails with a TypeError naming the sources it answers', async (_name, event, shown) => {
    const { handler, runs, errors } = setup();
    const invocation = handler(event as unknown as LambdaHttpEvent, lambdaContext());
    await expect(invocation).rejects.toThrow(TypeError);
    await expect(invocation).rejects.toThrow(shown);
    await expect(invocation).rejects.toThrow(
      /API Gateway REST APIs .* HTTP APIs \(payload format 1\.0 or 2\.0\), Lambda Function URLs and Application Load Balancer/,
    );
    expect([runs.length, errors.length]).toEqual([0, 0]);
  });
});

describe('createLambdaHandler(webhooks, options)', () => {
  it('needs a Webhooks', () => {
    for (const webhooks of [undefined, null, {}, { handle: 'no' }]) {
      expect(() => createLambdaHandler(webhooks as never)).toThrow(
        /^pixhook: @pixhook\/lambda: createLambdaHandler\(webhooks\) needs a Webhooks instance from @pixhook\/core\.$/,
      );
    }
  });

  it('takes an options object, names a wrong option, and refuses a tenant that is not a function', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(() => createLambdaHandler(webhooks, 'fast' as never)).toThrow(/takes an options object/);
    expect(() => createLambdaHandler(webhooks, null as never)).toThrow(/takes an options object/);
    expect(() => createLambdaHandler(webhooks, { path: '/webhooks' } as never)).toThrow(
      'pixhook: @pixhook/lambda: createLambdaHandler(webhooks, options) has no option "path". Options: tenant.',
    );
    expect(() => createLambdaHandler(webhooks, { tenat: () => 'a' } as never)).toThrow(/Did you mean "tenant"\?/);
    for (const tenant of ['acme', null, {}]) {
      expect(() => createLambdaHandler(webhooks, { tenant } as never)).toThrow(
        /^pixhook: @pixhook\/lambda: createLambdaHandler\(webhooks, \{ tenant \}\) takes a function/,
      );
    }
    expect(createLambdaHandler(webhooks, {})).toBeTypeOf('function');
  });

  describe('the tenant, with secrets looked up per tenant', () => {
    const SECRETS: Record<string, string> = { acme: 'whsec_lambda_acme_1f2e', globex: 'whsec_lambda_globex_9c8b' };
    function tenantSetup(options: Parameters<typeof createLambdaHandler>[1] = {}) {
      const webhooks = new Webhooks<Record<string, object>, LambdaRequest>({ secret: (tenant) => SECRETS[tenant] });
      const tenants: (string | undefined)[] = [];
      const errors: { code: string; cause: unknown }[] = [];
      webhooks.onAny((_event, context) => void tenants.push(context.tenant));
      webhooks.onError((error) => void errors.push({ code: error.code, cause: error.cause }));
      return { handler: createLambdaHandler(webhooks, options), tenants, errors };
    }
    const to = (tenant: string) => ({
      ...delivery(undefined, { secret: SECRETS[tenant] as string }),
      path: `/webhooks/${tenant}`,
    });

    it.each(['rest-v1', 'http-api-v2'] as const)(
      '%s: by default the {tenant} path parameter of the route',
      async (routed) => {
        const { handler, tenants } = tenantSetup();
        const event = eventFor(routed, { ...to('acme'), route: '/webhooks/{tenant}' });
        expect((event as APIGatewayProxyEvent).pathParameters).toEqual({ tenant: 'acme' });
        expect((await invoke(handler, routed, event)).status).toBe(200);
        // globex's path with acme's signature is refused.
        const crossed = eventFor(routed, { ...to('acme'), path: '/webhooks/globex', route: '/webhooks/{tenant}' });
        expect(errorCode((await invoke(handler, routed, crossed)).json)).toBe('SIGNATURE_MISMATCH');
        expect(tenants).toEqual(['acme']);
      },
    );

    it.each(SHAPES)('%s: the tenant option replaces the default, and gets { event, context }', async (shape) => {
      const seen: LambdaRequest[] = [];
      const { handler, tenants } = tenantSetup({
        tenant: (request) => {
          seen.push(request);
          const { event } = request;
          return ('rawPath' in event ? event.rawPath : event.path).split('/').at(-1);
        },
      });
      expect((await send(handler, shape, to('globex'))).status).toBe(200);
      expect(tenants).toEqual(['globex']);
      expect(Object.keys(seen[0] ?? {}).sort()).toEqual(['context', 'event']);
    });

    it.each(SHAPES)(
      '%s: a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, no crash',
      async (shape) => {
        await expectNoUnhandledRejection(async () => {
          for (const tenant of [...brokenTenantOptions(42), async () => 'acme']) {
            const { handler, tenants, errors } = tenantSetup({ tenant: tenant as never });
            const res = await send(handler, shape, to('acme'));
            expect({ status: res.status, code: errorCode(res.json) }).toEqual({
              status: 400,
              code: 'SIGNATURE_MISMATCH',
            });
            expect(res.text).not.toContain('tenant parser bug');
            expect(tenants).toEqual([]);
            expect(String((errors[0]?.cause as Error | undefined)?.message)).toMatch(
              /no tenant came with this request/,
            );
          }
        });
      },
    );
  });

  it('one handler answers every source in its own shape', async () => {
    const { handler, runs } = setup();
    for (const shape of SHAPES) expect((await send(handler, shape, delivery())).status).toBe(200);
    const v2 = runs[1]?.context.request?.event as APIGatewayProxyEventV2;
    expect(v2.requestContext.http.method).toBe('POST');
    expect(runs).toHaveLength(SHAPES.length);
  });

  it('verifies a signature made over the exact base64-decoded bytes (a timestamp with leading zeros)', async () => {
    const { handler } = setup();
    const d = delivery();
    const padded = `0${nowSeconds()}`;
    const headers = { ...d.headers, 'x-service-signature': sign(SECRET, d.body, padded) };
    expect((await send(handler, 'function-url', { ...d, headers, base64: true })).status).toBe(200);
  });
});
