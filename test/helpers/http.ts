// What every adapter under test speaks: requests as the tests describe them, answers as every
// adapter must give them, and a real HTTP client and server on 127.0.0.1.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import type { Webhooks } from '@pixhook/core';

/** A request as the tests describe it. `body` may be a stream, sent chunked without a length. */
export interface TestRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | (() => Readable);
}

/** An answer as every adapter must give it. */
export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The JSON body, or undefined when it is not JSON. */
  json: unknown;
}

export interface Client {
  send(request: TestRequest): Promise<TestResponse>;
  close(): Promise<void>;
}

/** One adapter (and framework version) under test. */
export interface AdapterUnderTest {
  name: string;
  /** Mounts `webhooks` at `/webhooks` in a fresh app, the way the README tells users to. */
  create(webhooks: Webhooks): Promise<Client>;
  /**
   * Mounts `webhooks` at `/webhooks/:tenant` in a fresh app, the tenant read as the README's "A
   * secret per tenant" says: the adapter's default (the route's `tenant` parameter) where it has
   * one, else its `tenant` option reading the last segment of the path.
   */
  createTenant?(webhooks: Webhooks): Promise<Client>;
}

export const WEBHOOK_PATH = '/webhooks';

/** Where `createTenant` mounts, in Express, Fastify and Nest route syntax. */
export const TENANT_ROUTE = '/webhooks/:tenant';

/** The tenant of a path under `/webhooks/`, for adapters without route parameters (Koa's middleware, fetch, Function URLs, ALB). */
export const tenantOfPath = (path: string): string | undefined => /^\/webhooks\/([^/]+)\/?$/.exec(path)?.[1];

export function toResponse(status: number, headers: Record<string, unknown>, text: string): TestResponse {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, headers: flat, text, json };
}

/** Sends a request over real HTTP to a server listening on 127.0.0.1. */
export function httpSend(port: number, request: TestRequest): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const body = request.body;
    const headers: Record<string, string | number> = { ...request.headers };
    if (body !== undefined && typeof body !== 'function' && headers['content-length'] === undefined) {
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: request.method ?? 'POST',
        path: request.path ?? WEBHOOK_PATH,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve(toResponse(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString('utf8'))),
        );
        res.on('error', reject);
      },
    );
    // A server may answer (413) and close before it has read everything we send.
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    if (typeof body === 'function') body().pipe(req);
    else req.end(body);
  });
}

/** Starts a Node request listener on 127.0.0.1 at a free port. */
export async function listen(listener: http.RequestListener): Promise<Client> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    send: (request) => httpSend(port, request),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
