import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { WebhookVerificationError } from './protocol/errors.js';
import { readStream } from './runtime/read-stream.js';
import type { BodyReader, WebhookResponse } from './seams/handle-input.js';

/**
 * A `BodyReader` for a Node request, shared by the Express and Koa adapters. It uses a raw copy of
 * the body when an earlier parser kept one, otherwise reads the stream itself and stops at the
 * limit (413 without buffering the rest) or at the deadline core passes (408 `BODY_TIMEOUT`). When a parser consumed the stream and kept no copy, it
 * answers `RAW_BODY_UNAVAILABLE` with `hint`, which tells the user how to mount the middleware.
 *
 * @param req - the Node request, or the stream that carries its body
 * @param copy - a raw copy kept by a body parser (`req.rawBody`, Koa's `ctx.request.rawBody`), if any
 * @param hint - one sentence on how to mount the middleware in this framework
 * @example
 * await webhooks.handle({ method: req.method, headers: req.headers, body: nodeBodyReader(req, req.rawBody, hint), request: req })
 */
export function nodeBodyReader(
  req: Readable & { headers?: IncomingHttpHeaders },
  copy: unknown,
  hint: string,
): BodyReader {
  // Not async: a copy is handed over at once, without a promise (core takes either).
  return (limit, timeoutMs) => {
    if (copy instanceof Uint8Array || typeof copy === 'string') return copy;
    // body-parser marks `_body`; any reader leaves `readableDidRead`. Reading now would get a
    // truncated or empty body and a misleading SIGNATURE_MISMATCH, so say what happened instead.
    const consumed = req.readableEnded || req.readableDidRead || (req as { _body?: unknown })._body === true;
    if (consumed) {
      throw new WebhookVerificationError(
        'RAW_BODY_UNAVAILABLE',
        `A body parser consumed the request before pixhook and kept no raw copy, so the signature cannot be checked. ${hint}`,
      );
    }
    return readStream(req, limit, req.headers?.['content-length'], timeoutMs);
  };
}

/**
 * The raw body an earlier parser kept, for `nodeBodyReader`'s `copy`: bytes first (`express.raw()`
 * leaves a `Buffer` in `body`, a verify hook one in `rawBody`), then text (`express.text()`,
 * koa-bodyparser's `rawBody`, serverless wrappers), which core takes as UTF-8. Anything else (a
 * parsed object, nothing) gives undefined: the stream is read, or its absence explained.
 *
 * @param body - `req.body` / `ctx.request.body`
 * @param rawBody - `req.rawBody` / `ctx.request.rawBody`
 * @example
 * nodeBodyReader(req, rawCopyOf(req.body, req.rawBody), hint)
 */
export function rawCopyOf(body: unknown, rawBody: unknown): Uint8Array | string | undefined {
  if (body instanceof Uint8Array) return body;
  if (rawBody instanceof Uint8Array || typeof rawBody === 'string') return rawBody;
  return typeof body === 'string' ? body : undefined;
}

/**
 * A predicate for the adapters' `path` option: without a path every request matches; with one,
 * the request path must equal it, a trailing slash tolerated. The query string is ignored.
 *
 * @example
 * const matches = pathMatcher('/webhooks', '@pixhook/koa'); matches('/webhooks/') // true
 */
export function pathMatcher(path: string | undefined, owner: string): (requestPath: string) => boolean {
  if (path === undefined) return () => true;
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError(`pixhook: ${owner}: path must be a string starting with "/", got ${JSON.stringify(path)}.`);
  }
  const want = trimSlash(path);
  return (requestPath) => {
    const q = requestPath.indexOf('?');
    return trimSlash(q === -1 ? requestPath : requestPath.slice(0, q)) === want;
  };
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Writes pixhook's answer on a Node response, for middleware-style adapters (Express, and
 * `@pixhook/nestjs` on Express). Nothing is written when the response is already on its way: a
 * timeout middleware (or the app) may have answered while the body or a handler was slow, and
 * writing headers then throws. Never throws: an error goes to `next` while it can still answer.
 *
 * @example
 * webhooks.handle(input).then((answer) => sendAnswer(res, answer, next), (error) => failAnswer(res, error, next))
 */
export function sendAnswer(res: ServerResponse, result: WebhookResponse, next: (error?: unknown) => void): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  try {
    res.statusCode = result.status;
    for (const name in result.headers) res.setHeader(name, result.headers[name] as string);
    res.end(result.body);
  } catch (error) {
    failAnswer(res, error, next);
  }
}

/**
 * Hands an error to the framework (`next(error)`) while it can still answer; otherwise the
 * connection is all that is left, and it is closed. Never throws.
 */
export function failAnswer(res: ServerResponse, error: unknown, next: (error?: unknown) => void): void {
  if (!res.headersSent) {
    try {
      next(error);
      return;
    } catch {
      // fall through: an error handler that throws leaves nothing to answer with
    }
  }
  if (!res.writableEnded) res.destroy();
}
