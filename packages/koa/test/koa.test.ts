/**
 * Koa-specific behaviour (2 and 3), over real HTTP on 127.0.0.1: body parsers mounted before the
 * middleware, the path option and next(), and what handlers receive.
 */
import { createRequire } from 'node:module';
import { bodyParser } from '@koa/bodyparser';
import { Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { webhookMiddleware } from '@pixhook/koa';
import { type Client, listen, streamOf } from '@pixhook/test-helpers/adapters';
import { delivery, errorCode, recordingWebhooks, SECRET } from '@pixhook/test-helpers/deliveries';
import {
  brokenTenantOptions,
  expectNoUnhandledRejection,
  NO_TENANT_CAUSE,
  recordingTenantWebhooks,
} from '@pixhook/test-helpers/tenants';
import type Koa from 'koa';
import Koa2 from 'koa2';
import Koa3 from 'koa3';
import { afterEach, describe, expect, it } from 'vitest';

// koa-bodyparser ships no types; it is a plain Koa middleware factory.
const koaBodyParser = createRequire(import.meta.url)('koa-bodyparser') as (options?: object) => Koa.Middleware;

const VERSIONS = [
  { name: 'koa@2', Koa: Koa2 as typeof Koa },
  { name: 'koa@3', Koa: Koa3 as typeof Koa },
];

describe.each(VERSIONS)('$name', ({ Koa }) => {
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  async function serve(app: Koa): Promise<Client> {
    const client = await listen(app.callback());
    clients.push(client);
    return client;
  }

  it.each([
    ['koa-bodyparser', () => koaBodyParser()],
    ['@koa/bodyparser', () => bodyParser() as unknown as Koa.Middleware],
  ])('%s mounted before: its ctx.request.rawBody is verified → 200', async (_name, parser) => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    const parsed: unknown[] = [];
    app.use(parser());
    app.use(async (ctx, next) => {
      parsed.push((ctx.request as { body?: unknown }).body);
      await next();
    });
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    const event = createTestEvent('image.deleted');
    const res = await client.send(delivery(event));
    expect(res.status).toBe(200);
    expect(runs.map((r) => r.id)).toEqual([event.id]);
    // The parser did read the stream: only its raw copy could have been verified.
    expect(parsed).toEqual([event]);
    // And a tampered body is still caught through that copy.
    const d = delivery();
    const tampered = await client.send({ ...d, body: d.body.replace('"created":', '"created": ') });
    expect(errorCode(tampered.json)).toBe('SIGNATURE_MISMATCH');
    expect(runs).toHaveLength(1);
  });

  it('a body parser that skips the content type leaves the stream to pixhook → 200', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    app.use(koaBodyParser({ enableTypes: ['json'] }));
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    const res = await client.send(delivery(undefined, { headers: { 'content-type': 'text/plain' } }));
    expect(res.status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('a parser that consumed the stream without keeping rawBody → 500 RAW_BODY_UNAVAILABLE', async () => {
    const { webhooks, runs, errors } = recordingWebhooks();
    const app = new Koa();
    app.use(async (ctx, next) => {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      (ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      await next();
    });
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    const res = await client.send(delivery());
    expect(res.status).toBe(500);
    expect(errorCode(res.json)).toBe('RAW_BODY_UNAVAILABLE');
    expect((res.json as { error: { message: string } }).error.message).toMatch(/before the body parser/);
    expect(runs).toEqual([]);
    expect(errors).toEqual(['RAW_BODY_UNAVAILABLE']);
  });

  it('a Buffer in ctx.request.body counts as the raw bytes', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    app.use(async (ctx, next) => {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      (ctx.request as { body?: unknown }).body = Buffer.concat(chunks);
      await next();
    });
    app.use(webhookMiddleware(webhooks));
    const client = await serve(app);
    expect((await client.send(delivery())).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('a string in ctx.request.body (a text parser, a serverless wrapper) counts as the body, taken as UTF-8', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    app.use(async (ctx, next) => {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      (ctx.request as { body?: unknown }).body = Buffer.concat(chunks).toString('utf8');
      await next();
    });
    app.use(webhookMiddleware(webhooks));
    const client = await serve(app);
    const event = createTestEvent('image.created', { filename: 'café-日本-🙂.jpg' });
    expect((await client.send(delivery(event))).status).toBe(200);
    expect(runs.map((r) => r.id)).toEqual([event.id]);
  });

  it('with path: other paths go to next() and downstream middleware answers', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    const downstream: string[] = [];
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    app.use(async (ctx) => {
      downstream.push(`${ctx.method} ${ctx.path}`);
      ctx.body = { downstream: true };
    });
    const client = await serve(app);
    const other = await client.send({ method: 'GET', path: '/health' });
    expect(other.json).toEqual({ downstream: true });
    const nested = await client.send({ ...delivery(), path: '/webhooks/extra' });
    expect(nested.json).toEqual({ downstream: true });
    const prefixed = await client.send({ ...delivery(), path: '/api/webhooks' });
    expect(prefixed.json).toEqual({ downstream: true });
    expect(downstream).toEqual(['GET /health', 'POST /webhooks/extra', 'POST /api/webhooks']);
    expect(runs).toEqual([]);
  });

  it("with path: '/webhooks/' is tolerated and the query string ignored", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    let downstream = 0;
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    app.use(async (ctx) => {
      downstream++;
      ctx.body = 'downstream';
    });
    const client = await serve(app);
    for (const path of ['/webhooks', '/webhooks/', '/webhooks?attempt=2', '/webhooks/?a=1&b=2']) {
      const res = await client.send({ ...delivery(), path });
      expect([path, res.status]).toEqual([path, 200]);
    }
    const get = await client.send({ method: 'GET', path: '/webhooks?x=1' });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(downstream).toBe(0);
    expect(runs).toHaveLength(4);
  });

  it('a path given with a trailing slash matches without one too', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    app.use(webhookMiddleware(webhooks, { path: '/hooks/' }));
    const client = await serve(app);
    expect((await client.send({ ...delivery(), path: '/hooks' })).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('without path every request that reaches it is handled', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    let downstream = 0;
    app.use(webhookMiddleware(webhooks));
    app.use(async (ctx) => {
      downstream++;
      ctx.body = 'downstream';
    });
    const client = await serve(app);
    expect((await client.send({ ...delivery(), path: '/anything/at/all' })).status).toBe(200);
    const get = await client.send({ method: 'GET', path: '/health' });
    expect(get.status).toBe(405);
    expect(errorCode(get.json)).toBe('METHOD_NOT_ALLOWED');
    expect(downstream).toBe(0);
    expect(runs).toHaveLength(1);
  });

  it('upstream middleware sees the answer pixhook set', async () => {
    const { webhooks } = recordingWebhooks();
    const app = new Koa();
    const statuses: number[] = [];
    app.use(async (ctx, next) => {
      await next();
      statuses.push(ctx.status);
    });
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    await client.send(delivery());
    await client.send(delivery(undefined, { headers: { 'x-service-signature': undefined } }));
    expect(statuses).toEqual([200, 400]);
  });

  it('an oversized chunked body → 413, and the server still answers the next request', async () => {
    const { webhooks, runs } = recordingWebhooks({ maxBodyBytes: 64 * 1024 });
    const app = new Koa();
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    const res = await client.send({ ...delivery(), body: streamOf(8 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(errorCode(res.json)).toBe('PAYLOAD_TOO_LARGE');
    expect((await client.send(delivery())).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('context.request is the Koa ctx', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = new Koa();
    const seen: unknown[] = [];
    app.use(async (ctx, next) => {
      seen.push(ctx);
      await next();
    });
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    const client = await serve(app);
    await client.send(delivery());
    expect(runs).toHaveLength(1);
    expect(runs[0]?.request).toBe(seen[0]);
    const ctx = runs[0]!.request as Koa.Context;
    expect(ctx.path).toBe('/webhooks');
    expect(ctx.get('x-service-event')).toBe('image.created');
  });

  it('throws when built without a Webhooks instance, or with a bad path', () => {
    expect(() => webhookMiddleware(undefined as never)).toThrow(/needs a Webhooks instance/);
    expect(() => webhookMiddleware(new Webhooks({ secret: SECRET }), { path: 'webhooks' })).toThrow(/path/);
  });

  it('a misspelled option throws, naming the right one', () => {
    expect(() => webhookMiddleware(new Webhooks({ secret: SECRET }), { Path: '/webhooks' } as never)).toThrow(
      /@pixhook\/koa: .*no option "Path"\. Did you mean "path"\?/,
    );
  });

  describe('the tenant, with secrets looked up per tenant', () => {
    const SECRETS: Record<string, string> = { acme: 'whsec_koa_acme_2c7e', globex: 'whsec_koa_globex_6a1f' };
    const tenantWebhooks = () => recordingTenantWebhooks(SECRETS);
    const to = (path: string, tenant: string) => ({ ...delivery(undefined, { secret: SECRETS[tenant] }), path });

    it('by default ctx.params.tenant, as @koa/router sets it', async () => {
      const { webhooks, tenants } = tenantWebhooks();
      const app = new Koa();
      // What @koa/router's router.post('/webhooks/:tenant', …) does before calling the middleware.
      app.use(async (ctx, next) => {
        const match = /^\/webhooks\/([^/]+)$/.exec(ctx.path);
        if (match === null) return;
        (ctx as { params?: Record<string, string> }).params = { tenant: decodeURIComponent(match[1] as string) };
        await next();
      });
      app.use(webhookMiddleware(webhooks));
      const client = await serve(app);
      expect((await client.send(to('/webhooks/acme', 'acme'))).status).toBe(200);
      expect(errorCode((await client.send(to('/webhooks/globex', 'acme'))).json)).toBe('SIGNATURE_MISMATCH');
      expect(tenants).toEqual(['acme']);
    });

    it('the tenant option reads it from the path (the path option matches one exact path)', async () => {
      const { webhooks, tenants } = tenantWebhooks();
      const app = new Koa();
      app.use(webhookMiddleware(webhooks, { tenant: (ctx) => /^\/webhooks\/([^/]+)$/.exec(ctx.path)?.[1] }));
      const client = await serve(app);
      expect((await client.send(to('/webhooks/globex', 'globex'))).status).toBe(200);
      expect(errorCode((await client.send(to('/webhooks', 'globex'))).json)).toBe('SIGNATURE_MISMATCH');
      expect(tenants).toEqual(['globex']);
    });

    it('a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, the app goes on', async () => {
      await expectNoUnhandledRejection(async () => {
        for (const tenant of brokenTenantOptions(7)) {
          const { webhooks, tenants, causes } = tenantWebhooks();
          const app = new Koa();
          app.use(webhookMiddleware(webhooks, { tenant: tenant as never }));
          const client = await serve(app);
          const res = await client.send(to('/webhooks/acme', 'acme'));
          expect({ status: res.status, code: errorCode(res.json) }).toEqual({
            status: 400,
            code: 'SIGNATURE_MISMATCH',
          });
          expect(res.text).not.toContain('tenant parser bug');
          expect(tenants).toEqual([]);
          expect(causes).toEqual([expect.stringMatching(NO_TENANT_CAUSE)]);
        }
      });
    });

    it('a tenant option that is not a function throws at once', () => {
      const webhooks = new Webhooks({ secret: SECRET });
      for (const tenant of ['acme', null, { param: 'tenant' }]) {
        expect(() => webhookMiddleware(webhooks, { tenant } as never)).toThrow(
          /^pixhook: @pixhook\/koa: webhookMiddleware\(webhooks, \{ tenant \}\) takes a function/,
        );
      }
      expect(() => webhookMiddleware(webhooks, { tenants: () => 'a' } as never)).toThrow(/Did you mean "tenant"\?/);
    });
  });
});
