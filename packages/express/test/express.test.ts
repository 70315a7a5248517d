/**
 * Express-specific behaviour (4 and 5), over real HTTP on 127.0.0.1: parsers mounted before the
 * middleware, mounting styles, the rest of the app, body limits, and what handlers receive.
 */
import { Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { webhookMiddleware } from '@pixhook/express';
import { type Client, listen, streamOf } from '@pixhook/test-helpers/adapters';
import { delivery, errorCode, recordingWebhooks, SECRET } from '@pixhook/test-helpers/deliveries';
import {
  brokenTenantOptions,
  expectNoUnhandledRejection,
  NO_TENANT_CAUSE,
  recordingTenantWebhooks,
} from '@pixhook/test-helpers/tenants';
import type { Express, NextFunction, Request, Response } from 'express';
import express4 from 'express4';
import express5 from 'express5';
import { afterEach, describe, expect, it } from 'vitest';

const VERSIONS = [
  { name: 'express@4', express: express4 as unknown as typeof express5 },
  { name: 'express@5', express: express5 },
];

describe.each(VERSIONS)('$name', ({ express }) => {
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  async function serve(app: Express): Promise<Client> {
    const client = await listen(app);
    clients.push(client);
    return client;
  }

  it('express.json() mounted before, without a verify hook → 500 RAW_BODY_UNAVAILABLE that says how to mount', async () => {
    const { webhooks, runs, errors } = recordingWebhooks();
    const app = express();
    app.use(express.json());
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const res = await client.send(delivery());
    expect(errors).toEqual(['RAW_BODY_UNAVAILABLE']);
    expect(res.status).toBe(500);
    expect(errorCode(res.json)).toBe('RAW_BODY_UNAVAILABLE');
    const message = (res.json as { error: { message: string } }).error.message;
    expect(message).toMatch(/before express\.json\(\)/);
    expect(message).toContain('verify');
    expect(runs).toEqual([]);
  });

  it('express.json({ verify }) keeping req.rawBody, mounted before → 200, the raw copy is verified', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    let parsed: unknown;
    app.use(
      express.json({
        verify: (req, _res, buf) => {
          (req as unknown as { rawBody: Buffer }).rawBody = buf;
        },
      }),
    );
    app.use((req: Request, _res: Response, next: NextFunction) => {
      parsed = req.body;
      next();
    });
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const event = createTestEvent('image.created');
    const res = await client.send(delivery(event));
    expect(res.status).toBe(200);
    expect(runs.map((r) => r.id)).toEqual([event.id]);
    // The parser really did consume the stream: only the raw copy could have been verified.
    expect(parsed).toEqual(event);
  });

  it('a tampered body is still caught through req.rawBody', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use(
      express.json({
        verify: (req, _res, buf) => {
          (req as unknown as { rawBody: Buffer }).rawBody = buf;
        },
      }),
    );
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const d = delivery();
    const res = await client.send({ ...d, body: d.body.replace('"created":', '"created": ') });
    expect(errorCode(res.json)).toBe('SIGNATURE_MISMATCH');
    expect(runs).toEqual([]);
  });

  it('express.json() mounted before but skipping the content type leaves the stream to pixhook → 200', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use(express.json());
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const res = await client.send(delivery(undefined, { headers: { 'content-type': 'text/plain' } }));
    expect(res.status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it("express.raw({ type: '*/*' }) mounted before → 200 from the Buffer in req.body", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use(express.raw({ type: '*/*' }));
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    expect((await client.send(delivery())).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it("express.text({ type: '*/*' }) mounted before → 200 from the string in req.body, taken as UTF-8", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use(express.text({ type: '*/*' }));
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const event = createTestEvent('image.created', { filename: 'café-日本-🙂.jpg' });
    expect((await client.send(delivery(event))).status).toBe(200);
    expect(runs.map((r) => r.id)).toEqual([event.id]);
    // Still the signed text: a changed string fails.
    const d = delivery();
    const tampered = await client.send({ ...d, body: d.body.replace('"created":', '"created": ') });
    expect(errorCode(tampered.json)).toBe('SIGNATURE_MISMATCH');
  });

  it("app.use('/webhooks', mw): POST → 200, GET → 405 with Allow: POST", async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    expect((await client.send(delivery())).status).toBe(200);
    const res = await client.send({ method: 'GET', path: '/webhooks' });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(errorCode(res.json)).toBe('METHOD_NOT_ALLOWED');
    expect(runs).toHaveLength(1);
  });

  it('app.use(webhookMiddleware(webhooks, { path })): other paths reach later routes', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.use(webhookMiddleware(webhooks, { path: '/webhooks' }));
    app.use(express.json());
    app.get('/health', (_req, res) => void res.send('ok'));
    app.post('/api/echo', (req, res) => void res.json({ got: req.body }));
    const client = await serve(app);
    expect((await client.send({ method: 'GET', path: '/health' })).text).toBe('ok');
    const echo = await client.send({
      path: '/api/echo',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(echo.json).toEqual({ got: { a: 1 } });
    // The webhook path itself, with a trailing slash and a query string.
    expect((await client.send(delivery())).status).toBe(200);
    expect((await client.send({ ...delivery(), path: '/webhooks/' })).status).toBe(200);
    expect((await client.send({ ...delivery(), path: '/webhooks?source=test' })).status).toBe(200);
    expect((await client.send({ ...delivery(), path: '/webhooks/other' })).status).toBe(404);
    expect(runs).toHaveLength(3);
  });

  it('other JSON routes of the same app still parse JSON (app.post(path, mw) before app.use(express.json()))', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    app.post('/webhooks', webhookMiddleware(webhooks));
    app.use(express.json());
    app.post('/api/items', (req, res) => void res.json({ type: typeof req.body, body: req.body }));
    const client = await serve(app);
    const res = await client.send({
      path: '/api/items',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"x","n":2}',
    });
    expect(res.json).toEqual({ type: 'object', body: { name: 'x', n: 2 } });
    expect((await client.send(delivery())).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('an oversized chunked body → 413, and the server still answers the next request', async () => {
    const { webhooks, runs } = recordingWebhooks({ maxBodyBytes: 64 * 1024 });
    const app = express();
    app.post('/webhooks', webhookMiddleware(webhooks));
    app.get('/health', (_req, res) => void res.send('ok'));
    const client = await serve(app);
    const d = delivery();
    const res = await client.send({ ...d, body: streamOf(8 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(errorCode(res.json)).toBe('PAYLOAD_TOO_LARGE');
    expect((await client.send({ method: 'GET', path: '/health' })).text).toBe('ok');
    expect((await client.send(delivery())).status).toBe(200);
    expect(runs).toHaveLength(1);
  });

  it('a Content-Length above the limit → 413', async () => {
    const { webhooks } = recordingWebhooks({ maxBodyBytes: 100 });
    const app = express();
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    const res = await client.send(delivery());
    expect(res.status).toBe(413);
  });

  it('context.request is the Express req', async () => {
    const { webhooks, runs } = recordingWebhooks();
    const app = express();
    const seen: unknown[] = [];
    app.use((req, _res, next) => {
      seen.push(req);
      next();
    });
    app.post('/webhooks', webhookMiddleware(webhooks));
    const client = await serve(app);
    await client.send(delivery());
    expect(runs).toHaveLength(1);
    expect(runs[0]?.request).toBe(seen[0]);
    const req = runs[0]!.request as Request;
    expect(typeof req.get).toBe('function');
    expect(req.get('x-service-event')).toBe('image.created');
  });

  it('a handler failure answers 500 HANDLER_FAILED and never reaches the error handler of the app', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on('image.created', () => {
      throw new Error('secret internals');
    });
    const told: string[] = [];
    webhooks.onError((error) => void told.push(`${error.code}: ${(error.cause as Error).message}`));
    const app = express();
    let appErrors = 0;
    app.post('/webhooks', webhookMiddleware(webhooks));
    app.use((_error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      appErrors++;
      res.status(599).end();
    });
    const client = await serve(app);
    const res = await client.send(delivery());
    expect(res.status).toBe(500);
    expect(errorCode(res.json)).toBe('HANDLER_FAILED');
    expect(res.text).not.toContain('secret internals');
    expect(appErrors).toBe(0);
    expect(told).toEqual(['HANDLER_FAILED: secret internals']);
  });

  it('throws when built without a Webhooks instance, or with a bad path', () => {
    expect(() => webhookMiddleware(undefined as never)).toThrow(/needs a Webhooks instance/);
    expect(() => webhookMiddleware({} as never)).toThrow(/needs a Webhooks instance/);
    expect(() => webhookMiddleware(new Webhooks({ secret: SECRET }), { path: 'webhooks' })).toThrow(/path/);
  });

  it('a misspelled option throws, naming the right one', () => {
    expect(() => webhookMiddleware(new Webhooks({ secret: SECRET }), { paht: '/webhooks' } as never)).toThrow(
      /@pixhook\/express: .*no option "paht"\. Did you mean "path"\?/,
    );
  });

  describe('the tenant, with secrets looked up per tenant', () => {
    const SECRETS: Record<string, string> = { acme: 'whsec_express_acme_4b1d', globex: 'whsec_express_globex_7e0a' };
    const tenantWebhooks = () => recordingTenantWebhooks(SECRETS);
    const to = (path: string, tenant: string) => ({ ...delivery(undefined, { secret: SECRETS[tenant] }), path });

    it("by default the route's :tenant parameter", async () => {
      const { webhooks, tenants } = tenantWebhooks();
      const app = express();
      app.post('/webhooks/:tenant', webhookMiddleware(webhooks));
      const client = await serve(app);
      expect((await client.send(to('/webhooks/acme', 'acme'))).status).toBe(200);
      expect(errorCode((await client.send(to('/webhooks/globex', 'acme'))).json)).toBe('SIGNATURE_MISMATCH');
      expect(tenants).toEqual(['acme']);
    });

    it('the tenant option replaces the default: a header here', async () => {
      const { webhooks, tenants } = tenantWebhooks();
      const app = express();
      app.post('/webhooks', webhookMiddleware(webhooks, { tenant: (req: Request) => req.get('x-tenant') }));
      const client = await serve(app);
      const request = to('/webhooks', 'globex');
      const res = await client.send({ ...request, headers: { ...request.headers, 'x-tenant': 'globex' } });
      expect(res.status).toBe(200);
      expect(tenants).toEqual(['globex']);
    });

    it('a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, the app goes on', async () => {
      await expectNoUnhandledRejection(async () => {
        for (const tenant of brokenTenantOptions(['acme'])) {
          const { webhooks, tenants, causes } = tenantWebhooks();
          const app = express();
          app.post('/webhooks/:tenant', webhookMiddleware(webhooks, { tenant: tenant as never }));
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
          /^pixhook: @pixhook\/express: webhookMiddleware\(webhooks, \{ tenant \}\) takes a function/,
        );
      }
      expect(() => webhookMiddleware(webhooks, { tennant: () => 'a' } as never)).toThrow(/Did you mean "tenant"\?/);
    });
  });
});
