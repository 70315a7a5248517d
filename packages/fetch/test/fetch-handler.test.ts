/**
 * What only the fetch handler does: reading `request.body` within the limit, the `Request` as
 * `context.request`, a body read before pixhook, and the Web Crypto path behind it. The shared
 * contract table (test/contract.test.ts) runs every other row against it.
 */
import { type HandlerContext, Webhooks, type WebhooksOptions } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { createFetchHandler } from '@pixhook/fetch';
import { delivery, nowSeconds, SECRET } from '@pixhook/test-helpers/deliveries';
import { fromResponse } from '@pixhook/test-helpers/fetch-client';
import {
  brokenTenantOptions,
  expectNoUnhandledRejection,
  NO_TENANT_CAUSE,
  recordingTenantWebhooks,
} from '@pixhook/test-helpers/tenants';
import { describe, expect, it, vi } from 'vitest';

/** The packages a fetch handler is built from; fresh copies of them on Web Crypto, see below. */
interface Modules {
  Webhooks: typeof Webhooks;
  createFetchHandler: typeof createFetchHandler;
}

/**
 * `@pixhook/core` and `@pixhook/fetch` loaded afresh while `process.getBuiltinModule` knows neither
 * `node:crypto` nor `node:buffer`, as on Workers: core looks both up once, when it loads, so these
 * copies verify on Web Crypto and decode with TextDecoder (the copies imported above keep node:crypto).
 */
async function loadWithoutNodeBuiltins(): Promise<Modules> {
  const lookup = process.getBuiltinModule.bind(process);
  const hidden = new Set(['node:crypto', 'crypto', 'node:buffer', 'buffer']);
  vi.resetModules();
  vi.spyOn(process, 'getBuiltinModule').mockImplementation(((id: string) =>
    hidden.has(id) ? undefined : lookup(id)) as typeof process.getBuiltinModule);
  try {
    const core = await import('@pixhook/core');
    const fetch = await import('@pixhook/fetch');
    return { Webhooks: core.Webhooks, createFetchHandler: fetch.createFetchHandler };
  } finally {
    vi.restoreAllMocks();
  }
}

function post(body: BodyInit | null, headers: Record<string, string>, init: RequestInit = {}): Request {
  return new Request('http://127.0.0.1/webhooks', {
    method: 'POST',
    headers,
    body,
    duplex: 'half',
    ...init,
  } as RequestInit);
}

/** A body stream of `total` bytes in 64 KiB chunks that counts what the handler pulled. */
function countingStream(total: number) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (state.pulled >= total) {
          controller.close();
          return;
        }
        const chunk = new Uint8Array(Math.min(65_536, total - state.pulled)).fill(0x61);
        state.pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
      cancel() {
        state.cancelled = true;
      },
      // Pull only when the reader asks, so `pulled` counts what the handler read.
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

function setup(options: Partial<WebhooksOptions> = {}, modules: Modules = { Webhooks, createFetchHandler }) {
  const webhooks = new modules.Webhooks<Record<string, object>, Request>({ secret: SECRET, ...options });
  const contexts: HandlerContext<Request>[] = [];
  webhooks.onAny((_event, context) => void contexts.push(context));
  // Told here rather than logged: the failures these tests cause on purpose stay out of the output.
  const errors: string[] = [];
  webhooks.onError((error) => void errors.push(error.code));
  return { webhooks, contexts, errors, handler: modules.createFetchHandler(webhooks) };
}

describe('createFetchHandler', () => {
  it('passes the very Request to handlers as context.request, and reads headers in any case', async () => {
    const { handler, contexts } = setup();
    const { body, headers } = delivery();
    const upper = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));
    const request = post(body, upper);
    const response = await handler(request);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true });
    expect(contexts).toHaveLength(1);
    expect(contexts[0]?.request).toBe(request);
    expect(contexts[0]?.deliveryId).toBe(headers['x-service-delivery']);
  });

  it('413 on a streamed body past maxBodyBytes: stops reading and cancels the stream', async () => {
    const { handler, contexts } = setup({ maxBodyBytes: 100_000 });
    const { stream, state } = countingStream(20 * 1024 * 1024);
    const response = await fromResponse(await handler(post(stream, delivery().headers)));
    expect(response.status).toBe(413);
    expect(response.json).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    // The limit plus at most the chunk that crossed it.
    expect(state.pulled).toBeLessThanOrEqual(100_000 + 65_536);
    expect(state.cancelled).toBe(true);
    expect(contexts).toHaveLength(0);
  });

  it('413 on a declared Content-Length past maxBodyBytes without reading a byte', async () => {
    const { handler } = setup({ maxBodyBytes: 1024 });
    const { stream, state } = countingStream(4096);
    const response = await handler(post(stream, { ...delivery().headers, 'content-length': '4096' }));
    expect(response.status).toBe(413);
    expect(state.pulled).toBe(0);
  });

  it('a body of exactly maxBodyBytes, in many small chunks, is read whole and verified', async () => {
    const d = delivery();
    const bytes = new TextEncoder().encode(d.body);
    const { handler, contexts } = setup({ maxBodyBytes: bytes.byteLength });
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.byteLength) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 7));
        offset += 7;
      },
    });
    expect((await handler(post(stream, d.headers))).status).toBe(200);
    expect(contexts).toHaveLength(1);
  });

  it('408 BODY_TIMEOUT with connection: close when the body has not arrived by bodyTimeoutMs; the stream is cancelled', async () => {
    const { handler, contexts } = setup({ bodyTimeoutMs: 150 });
    const d = delivery();
    let cancelled = false;
    // Half the body, then nothing: a client that trickles or stalls.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(d.body.substring(0, 20)));
      },
      cancel() {
        cancelled = true;
      },
    });
    const started = Date.now();
    const response = await fromResponse(await handler(post(stream, d.headers)));
    expect(response.status).toBe(408);
    expect(response.json).toMatchObject({ error: { code: 'BODY_TIMEOUT' } });
    expect(response.headers.connection).toBe('close');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    // The body never ends: any answer proves the deadline; the margin is a busy machine's.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(cancelled).toBe(true);
    expect(contexts).toHaveLength(0);
  });

  it('a body that arrives within bodyTimeoutMs, in slow chunks, is read whole', async () => {
    const d = delivery();
    const bytes = new TextEncoder().encode(d.body);
    // Room for a busy machine: the chunks take some 25 ms on a quiet one.
    const { handler, contexts } = setup({ bodyTimeoutMs: 10_000 });
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (offset >= bytes.byteLength) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 100));
        offset += 100;
      },
    });
    expect((await handler(post(stream, d.headers))).status).toBe(200);
    expect(contexts).toHaveLength(1);
  });

  it('a body read before pixhook → 500 RAW_BODY_UNAVAILABLE that says how to fix it', async () => {
    const { handler, contexts, errors } = setup();
    const { body, headers } = delivery();
    const request = post(body, headers);
    await request.json();
    const response = await fromResponse(await handler(request));
    expect(response.status).toBe(500);
    expect(response.json).toMatchObject({ error: { code: 'RAW_BODY_UNAVAILABLE' } });
    expect(response.text).toContain('request.clone()');
    expect(contexts).toHaveLength(0);
    expect(errors).toEqual(['RAW_BODY_UNAVAILABLE']);
  });

  it('a body stream locked by another reader → 500 RAW_BODY_UNAVAILABLE', async () => {
    const { handler } = setup();
    const { body, headers } = delivery();
    const request = post(body, headers);
    request.body?.getReader();
    const response = await fromResponse(await handler(request));
    expect([response.status, (response.json as { error: { code: string } }).error.code]).toEqual([
      500,
      'RAW_BODY_UNAVAILABLE',
    ]);
  });

  it('a clone taken before reading the original verifies', async () => {
    const { handler } = setup();
    const { body, headers } = delivery();
    const request = post(body, headers);
    const clone = request.clone();
    await request.text();
    expect((await handler(clone)).status).toBe(200);
  });

  it('a body stream that fails midway → 400 BODY_UNREADABLE', async () => {
    const { handler } = setup();
    let sent = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Error('client aborted'));
        sent = true;
        controller.enqueue(new Uint8Array([0x7b]));
      },
    });
    const response = await fromResponse(await handler(post(stream, delivery().headers)));
    expect([response.status, (response.json as { error: { code: string } }).error.code]).toEqual([
      400,
      'BODY_UNREADABLE',
    ]);
  });

  it('checks its arguments when called, not per request', () => {
    expect(() => createFetchHandler({} as never)).toThrow(/needs a Webhooks instance/);
    expect(() => createFetchHandler(undefined as never)).toThrow(TypeError);
    expect(() => createFetchHandler(setup().webhooks, null as never)).toThrow(/options object/);
    expect(() => createFetchHandler(setup().webhooks, { path: '/x' } as never)).toThrow(
      /@pixhook\/fetch: createFetchHandler\(webhooks, options\) has no option "path"/,
    );
    expect(() => createFetchHandler(setup().webhooks, { tenat: () => 'a' } as never)).toThrow(
      /Did you mean "tenant"\?/,
    );
    for (const tenant of ['acme', null, { param: 'tenant' }]) {
      expect(() => createFetchHandler(setup().webhooks, { tenant } as never)).toThrow(
        /^pixhook: @pixhook\/fetch: createFetchHandler\(webhooks, \{ tenant \}\) takes a function/,
      );
    }
  });
});

describe('createFetchHandler: the tenant, with secrets looked up per tenant', () => {
  const SECRETS: Record<string, string> = { acme: 'whsec_fetch_acme_8d2a', globex: 'whsec_fetch_globex_1c4e' };
  function tenantSetup(tenant?: (request: Request) => string | undefined) {
    const { webhooks, tenants, causes } = recordingTenantWebhooks<Request>(SECRETS);
    return { handler: createFetchHandler(webhooks, tenant === undefined ? {} : { tenant }), tenants, causes };
  }
  const at = (url: string, tenant: string) => {
    const { body, headers } = delivery(undefined, { secret: SECRETS[tenant] });
    return new Request(url, { method: 'POST', headers, body });
  };
  const lastSegment = (request: Request) => new URL(request.url).pathname.split('/').at(-1);

  it('the tenant option chooses whose secret must match', async () => {
    const { handler, tenants } = tenantSetup(lastSegment);
    expect((await handler(at('https://example.com/webhooks/acme', 'acme'))).status).toBe(200);
    const crossed = await fromResponse(await handler(at('https://example.com/webhooks/globex', 'acme')));
    expect([crossed.status, (crossed.json as { error: { code: string } }).error.code]).toEqual([
      400,
      'SIGNATURE_MISMATCH',
    ]);
    expect(tenants).toEqual(['acme']);
  });

  it('without the option there is no tenant: a Request has no route parameters', async () => {
    const { handler, tenants, causes } = tenantSetup();
    expect((await handler(at('https://example.com/webhooks/acme', 'acme'))).status).toBe(400);
    expect(tenants).toEqual([]);
    expect(causes).toEqual([expect.stringMatching(NO_TENANT_CAUSE)]);
  });

  it('a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, no crash', async () => {
    await expectNoUnhandledRejection(async () => {
      for (const tenant of brokenTenantOptions(1)) {
        const { handler, tenants, causes } = tenantSetup(tenant as never);
        const res = await fromResponse(await handler(at('https://example.com/webhooks/acme', 'acme')));
        expect([res.status, (res.json as { error: { code: string } }).error.code]).toEqual([400, 'SIGNATURE_MISMATCH']);
        expect(res.text).not.toContain('tenant parser bug');
        expect(tenants).toEqual([]);
        expect(causes).toEqual([expect.stringMatching(NO_TENANT_CAUSE)]);
      }
    });
  });
});

describe('createFetchHandler on Web Crypto (node:crypto hidden, as on Workers)', () => {
  it('answers the representative rows as on Node', async () => {
    const event = createTestEvent('image.created');
    // One fixed clock for both runs: the stale row's message states its age in seconds.
    const now = nowSeconds();
    const requests = {
      valid: delivery(event, { timestamp: now }),
      badSignature: delivery(undefined, { secret: 'whsec_someone_else', timestamp: now }),
      stale: delivery(undefined, { timestamp: now - 301 }),
      duplicate: delivery(event, { timestamp: now }),
      tooLarge: delivery(createTestEvent('image.created', { blob: 'x'.repeat(2048) }), { timestamp: now }),
    };
    const run = async (modules?: Modules) => {
      const { handler, contexts } = setup({ maxBodyBytes: 1024, now: () => now * 1000 }, modules);
      const answers: Record<string, unknown> = {};
      for (const [name, { body, headers }] of Object.entries(requests)) {
        const { status, json } = await fromResponse(await handler(post(body, headers)));
        answers[name] = [status, json];
      }
      return { answers, runs: contexts.length };
    };
    const node = await run();
    const withoutNode = await loadWithoutNodeBuiltins();
    // These copies have no node:crypto: the synchronous verify() says so.
    const { body, headers } = requests.valid;
    expect(() => new withoutNode.Webhooks({ secret: SECRET }).verify(body, headers)).toThrow(
      /node:crypto is not available/,
    );
    const web = await run(withoutNode);
    expect(web).toEqual(node);
    expect(web.answers).toMatchObject({
      valid: [200, { received: true }],
      badSignature: [400, { error: { code: 'SIGNATURE_MISMATCH' } }],
      stale: [400, { error: { code: 'TIMESTAMP_OUT_OF_TOLERANCE' } }],
      duplicate: [200, { received: true, duplicate: true }],
      tooLarge: [413, { error: { code: 'PAYLOAD_TOO_LARGE' } }],
    });
    expect(web.runs).toBe(1);
  });
});
