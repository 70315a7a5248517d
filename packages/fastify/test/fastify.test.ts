/**
 * Fastify-specific behaviour: encapsulation (the app's other routes keep parsing JSON), prefix and
 * default path, option errors, and what handlers receive; registration through fastify-plugin (a
 * name, a clear error on Fastify 4, still encapsulated). fastify.inject, plus one real listener.
 */
import { createGunzip, gzipSync } from 'node:zlib';
import { Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import pixhook from '@pixhook/fastify';
import { httpSend, streamOf } from '@pixhook/test-helpers/adapters';
import { delivery, recordingWebhooks, SECRET } from '@pixhook/test-helpers/deliveries';
import {
  brokenTenantOptions,
  expectNoUnhandledRejection,
  NO_TENANT_CAUSE,
  recordingTenantWebhooks,
} from '@pixhook/test-helpers/tenants';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import Fastify4 from 'fastify4';
import { afterEach, describe, expect, it } from 'vitest';

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function app(): FastifyInstance {
  const instance = Fastify();
  apps.push(instance);
  return instance;
}

/** Injects a delivery at `url`. */
function post(instance: FastifyInstance, url: string, d = delivery()) {
  return instance.inject({ method: 'POST', url, headers: d.headers, payload: d.body });
}

const errorCode = (body: string): unknown => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

describe('@pixhook/fastify', () => {
  it('a sibling route in the same app still gets parsed JSON', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    const bodies: unknown[] = [];
    fastify.post('/api/items', async (request) => {
      bodies.push(request.body);
      return { type: typeof request.body, body: request.body };
    });
    await fastify.register(pixhook, { webhooks, path: '/webhooks' });
    fastify.post('/api/after', async (request) => ({ type: typeof request.body }));
    const items = await fastify.inject({ method: 'POST', url: '/api/items', payload: { name: 'x', n: 2 } });
    expect(items.json()).toEqual({ type: 'object', body: { name: 'x', n: 2 } });
    const after = await fastify.inject({ method: 'POST', url: '/api/after', payload: { a: 1 } });
    expect(after.json()).toEqual({ type: 'object' });
    expect((await post(fastify, '/webhooks')).statusCode).toBe(200);
    expect(runs).toHaveLength(1);
    expect(bodies).toEqual([{ name: 'x', n: 2 }]);
  });

  it('a sibling route with an unsupported content type still gets Fastify’s own 415', async () => {
    const { webhooks } = recordingWebhooks();
    const fastify = app();
    fastify.post('/api/items', async (request) => request.body);
    await fastify.register(pixhook, { webhooks });
    const res = await fastify.inject({
      method: 'POST',
      url: '/api/items',
      headers: { 'content-type': 'application/x-unknown' },
      payload: 'x',
    });
    expect(res.statusCode).toBe(415);
  });

  it('the webhook route accepts any content type: the signature decides', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks });
    for (const type of ['application/json', 'text/plain', 'application/x-unknown']) {
      const d = delivery(undefined, { headers: { 'content-type': type } });
      expect((await post(fastify, '/webhooks', d)).statusCode).toBe(200);
    }
    expect(runs).toHaveLength(3);
  });

  it('a stream set by a preParsing hook (here: gunzip) is the body pixhook reads', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    fastify.addHook('preParsing', async (request, _reply, payload) =>
      request.headers['content-encoding'] === 'gzip' ? payload.pipe(createGunzip()) : payload,
    );
    await fastify.register(pixhook, { webhooks });
    const d = delivery();
    const res = await fastify.inject({
      method: 'POST',
      url: '/webhooks',
      headers: { ...d.headers, 'content-encoding': 'gzip' },
      payload: gzipSync(d.body),
    });
    expect(res.statusCode).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it("registered with { prefix: '/api' } → served at /api/webhooks", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, prefix: '/api' });
    expect((await post(fastify, '/api/webhooks')).statusCode).toBe(200);
    expect((await post(fastify, '/webhooks')).statusCode).toBe(404);
    expect(runs).toHaveLength(1);
  });

  it('a custom path sits under the prefix', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, path: '/service/events', prefix: '/hooks' });
    expect((await post(fastify, '/hooks/service/events')).statusCode).toBe(200);
    expect((await post(fastify, '/webhooks')).statusCode).toBe(404);
    expect(runs).toHaveLength(1);
  });

  it("the path defaults to '/webhooks'", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks });
    expect((await post(fastify, '/webhooks')).statusCode).toBe(200);
    expect((await post(fastify, '/')).statusCode).toBe(404);
    expect(runs).toHaveLength(1);
  });

  it('other methods on the route answer 405 with Allow: POST', async () => {
    const { webhooks } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks });
    const res = await fastify.inject({ method: 'GET', url: '/webhooks' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(errorCode(res.body)).toBe('METHOD_NOT_ALLOWED');
  });

  it.each([
    ['no options', undefined, /needs a Webhooks instance/],
    ['no webhooks', { path: '/webhooks' }, /needs a Webhooks instance/],
    ['webhooks without handle()', { webhooks: {} }, /needs a Webhooks instance/],
    ['a path without a leading slash', { webhooks: new Webhooks({ secret: SECRET }), path: 'webhooks' }, /path must/],
    [
      'a misspelled option',
      { webhooks: new Webhooks({ secret: SECRET }), paths: '/x' },
      /no option "paths"\. Did you mean "path"\?/,
    ],
    ['webhook for webhooks', { webhook: new Webhooks({ secret: SECRET }) }, /Did you mean "webhooks"\?/],
    [
      'a tenant that is not a function',
      { webhooks: new Webhooks({ secret: SECRET }), tenant: 'acme' },
      /^pixhook: @pixhook\/fastify: register\(pixhook, \{ tenant \}\) takes a function/,
    ],
    [
      'tenants for tenant',
      { webhooks: new Webhooks({ secret: SECRET }), tenants: () => 'a' },
      /Did you mean "tenant"\?/,
    ],
  ])('registering with %s fails with a clear error', async (_name, options, message) => {
    const fastify = app();
    fastify.register(pixhook, options as never);
    await expect(fastify.ready()).rejects.toThrow(message);
  });

  it("Fastify's own registration options (prefix, logLevel) are accepted", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, prefix: '/hooks', logLevel: 'warn' });
    const res = await post(fastify, '/hooks/webhooks', delivery(createTestEvent('image.created')));
    expect(res.statusCode).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it("maxBodyBytes governs, not Fastify's own 1 MiB bodyLimit", async () => {
    const { webhooks, runs } = recordingWebhooks({ maxBodyBytes: 4 * 1024 * 1024 });
    const fastify = app();
    await fastify.register(pixhook, { webhooks });
    const big = delivery(createTestEvent('image.created', { blob: 'x'.repeat(2 * 1024 * 1024) }));
    const res = await post(fastify, '/webhooks', big);
    expect(res.statusCode).toBe(200);
    expect(runs).toHaveLength(1);
    const small = recordingWebhooks({ maxBodyBytes: 1024 });
    const strict = app();
    await strict.register(pixhook, { webhooks: small.webhooks });
    const tooBig = await post(
      strict,
      '/webhooks',
      delivery(createTestEvent('image.created', { blob: 'x'.repeat(2048) })),
    );
    expect(tooBig.statusCode).toBe(413);
    expect(errorCode(tooBig.body)).toBe('PAYLOAD_TOO_LARGE');
  });

  it('context.request is the Fastify request', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    const seen: FastifyRequest[] = [];
    fastify.addHook('onRequest', async (request) => {
      seen.push(request);
    });
    await fastify.register(pixhook, { webhooks });
    const event = createTestEvent('quota.warned');
    await post(fastify, '/webhooks', delivery(event));
    expect(runs.map((r) => r.id)).toEqual([event.id]);
    expect(runs[0]?.request).toBe(seen[0]);
    const request = runs[0]!.request as FastifyRequest;
    expect(request.url).toBe('/webhooks');
    expect(request.headers['x-service-event']).toBe('quota.warned');
  });

  it('over real HTTP: a valid delivery, a sibling JSON route and a chunked body over the limit', async () => {
    const { webhooks, runs } = recordingWebhooks({ maxBodyBytes: 64 * 1024 });
    const fastify = app();
    fastify.post('/api/echo', async (request) => ({ got: request.body }));
    await fastify.register(pixhook, { webhooks });
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    const { port } = fastify.server.address() as { port: number };
    expect((await httpSend(port, delivery())).status).toBe(200);
    const echo = await httpSend(port, {
      path: '/api/echo',
      headers: { 'content-type': 'application/json' },
      body: '{"a":[1,2]}',
    });
    expect(echo.json).toEqual({ got: { a: [1, 2] } });
    const big = await httpSend(port, { ...delivery(), body: streamOf(8 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect((big.json as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect((await httpSend(port, delivery())).status).toBe(200);
    expect(runs).toHaveLength(2);
  });
});

describe('@pixhook/fastify: the tenant, with secrets looked up per tenant', () => {
  const SECRETS: Record<string, string> = { acme: 'whsec_fastify_acme_0b3c', globex: 'whsec_fastify_globex_5f9d' };
  const tenantWebhooks = () => recordingTenantWebhooks(SECRETS);
  const signedBy = (tenant: string) => delivery(undefined, { secret: SECRETS[tenant] });

  it("by default the route's :tenant parameter (path: '/webhooks/:tenant'), under a prefix too", async () => {
    const { webhooks, tenants } = tenantWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, path: '/webhooks/:tenant', prefix: '/api' });
    expect((await post(fastify, '/api/webhooks/acme', signedBy('acme'))).statusCode).toBe(200);
    expect(errorCode((await post(fastify, '/api/webhooks/globex', signedBy('acme'))).body)).toBe('SIGNATURE_MISMATCH');
    // A Content-Type Fastify cannot parse is answered by the plugin's error handler: the tenant is read there too.
    const d = signedBy('globex');
    const odd = await fastify.inject({
      method: 'POST',
      url: '/api/webhooks/globex',
      headers: { ...d.headers, 'content-type': 'a b' },
      payload: d.body,
    });
    expect(odd.statusCode).toBe(200);
    expect(tenants).toEqual(['acme', 'globex']);
  });

  it('the tenant option replaces the default: a header here', async () => {
    const { webhooks, tenants } = tenantWebhooks();
    const fastify = app();
    await fastify.register(pixhook, {
      webhooks,
      tenant: (request: FastifyRequest) => request.headers['x-tenant'] as string | undefined,
    });
    const d = signedBy('globex');
    const res = await fastify.inject({
      method: 'POST',
      url: '/webhooks',
      headers: { ...d.headers, 'x-tenant': 'globex' },
      payload: d.body,
    });
    expect(res.statusCode).toBe(200);
    expect(tenants).toEqual(['globex']);
  });

  it('a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, the app goes on', async () => {
    await expectNoUnhandledRejection(async () => {
      for (const tenant of brokenTenantOptions({ tenant: 'acme' })) {
        const { webhooks, tenants, causes } = tenantWebhooks();
        const fastify = app();
        await fastify.register(pixhook, { webhooks, path: '/webhooks/:tenant', tenant: tenant as never });
        const res = await post(fastify, '/webhooks/acme', signedBy('acme'));
        expect({ status: res.statusCode, code: errorCode(res.body) }).toEqual({
          status: 400,
          code: 'SIGNATURE_MISMATCH',
        });
        expect(res.body).not.toContain('tenant parser bug');
        expect(tenants).toEqual([]);
        expect(causes).toEqual([expect.stringMatching(NO_TENANT_CAUSE)]);
      }
    });
  });
});

describe('@pixhook/fastify registration', () => {
  it('refuses Fastify 4 with a clear error naming the plugin and the version it needs', async () => {
    const old = Fastify4();
    apps.push(old);
    old.register(pixhook as never, { webhooks: recordingWebhooks().webhooks });
    await expect(old.ready()).rejects.toThrow(/@pixhook\/fastify.*5\.x.*4\.29\.1/);
  });

  it('is named @pixhook/fastify', async () => {
    const fastify = app();
    await fastify.register(pixhook, { webhooks: recordingWebhooks().webhooks });
    expect(fastify.hasPlugin('@pixhook/fastify')).toBe(true);
    expect(fastify.printPlugins()).toContain('@pixhook/fastify');
  });

  it('can be registered twice under different prefixes', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, prefix: '/a' });
    await fastify.register(pixhook, { webhooks, prefix: '/b' });
    expect((await post(fastify, '/a/webhooks')).statusCode).toBe(200);
    expect((await post(fastify, '/b/webhooks')).statusCode).toBe(200);
    expect(runs).toHaveLength(2);
  });

  it("keeps its parser and error handler inside: the app's other routes parse JSON and keep Fastify's errors", async () => {
    const { webhooks } = recordingWebhooks();
    const fastify = app();
    fastify.post('/before', async (request) => ({ body: request.body }));
    await fastify.register(pixhook, { webhooks });
    fastify.post('/after', async (request) => ({ body: request.body }));
    for (const url of ['/before', '/after']) {
      const res = await fastify.inject({ method: 'POST', url, payload: { name: 'x', n: 2 } });
      expect(res.json()).toEqual({ body: { name: 'x', n: 2 } });
      const broken = await fastify.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: '{"name":',
      });
      expect(broken.statusCode).toBe(400);
      const unknownType = await fastify.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-unknown' },
        payload: 'x',
      });
      expect(unknownType.statusCode).toBe(415);
    }
    expect(fastify.hasContentTypeParser('application/x-unknown')).toBe(false);
  });
});
