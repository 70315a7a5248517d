import type { Readable } from 'node:stream';
import type { FetchHandler } from '@pixhook/fetch';
import type { Client, TestRequest, TestResponse } from './http.js';

/**
 * A pull-based web stream over a Node stream: chunks are read only when the consumer asks, and
 * cancelling stops the source (Node 20's Readable.toWeb keeps pushing after a cancel).
 */
export function toWebStream(readable: Readable): ReadableStream<Uint8Array> {
  const chunks = readable[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}

/** A `Request` as a server runtime would build it from a `TestRequest` on `http://127.0.0.1`. */
export function toRequest(request: TestRequest): Request {
  const method = request.method ?? 'POST';
  const headers = new Headers(request.headers);
  const body = method === 'GET' || method === 'HEAD' ? undefined : request.body;
  if (body !== undefined && typeof body !== 'function' && !headers.has('content-length')) {
    headers.set('content-length', String(Buffer.byteLength(body)));
  }
  return new Request(`http://127.0.0.1${request.path ?? '/webhooks'}`, {
    method,
    headers,
    // A stream body goes without Content-Length, as a chunked upload arrives.
    body: typeof body === 'function' ? toWebStream(body()) : body,
    duplex: 'half',
  } as RequestInit);
}

/** The answer of a `Response`, in the shape the contract table reads. */
export async function fromResponse(response: Response): Promise<TestResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers, text, json };
}

/** A client that calls a fetch handler in-process with a real `Request`, as Next.js or Bun would. */
export function fetchClient(handler: FetchHandler): Client {
  return {
    send: async (request) => fromResponse(await handler(toRequest(request))),
    close: async () => {},
  };
}
