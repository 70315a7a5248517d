import type { IncomingMessage, ServerResponse } from 'node:http';
import { tenantFrom, type WebhooksLike } from '@pixhook/core';
import { failAnswer, nodeBodyReader, rawCopyOf, sendAnswer } from '@pixhook/core/node';
import pixhookFastify from '@pixhook/fastify';

const HINT =
  "pixhook's route runs before Nest's body parsers, so a middleware added with app.use() read this body first: let it skip the webhook path, or make it keep the raw bytes in req.rawBody.";

/** The names of body-parser's middleware (Express 4 and 5), which Nest and apps add with `app.use()`. */
const BODY_PARSERS = new Set(['jsonParser', 'urlencodedParser', 'rawParser', 'textParser']);

type ExpressRequest = IncomingMessage & { body?: unknown; rawBody?: unknown; params?: unknown };
/** The module's `tenant` option (the default reads the `:tenant` route parameter). */
type ReadTenant = ((request: never) => string | undefined) | undefined;

/** The default `tenant` option on Express: the `:tenant` route parameter. */
const tenantParameter = (req: ExpressRequest): string | undefined =>
  (req.params as { tenant?: string } | undefined)?.tenant;
interface Layer {
  handle?: { name?: string };
  route?: unknown;
}
interface ExpressApp {
  all(path: string, handler: (req: ExpressRequest, res: ServerResponse, next: (error?: unknown) => void) => void): void;
  router?: { stack?: Layer[] };
  _router?: { stack?: Layer[] };
}
interface FastifyLike {
  register(plugin: unknown, options: unknown): unknown;
}

/**
 * Mounts the webhook route on the Express app under Nest, ahead of the body parsers Nest added
 * (and any the app added with `app.use()`), so the raw bytes are there with or without
 * `rawBody: true`, and no guard, interceptor, pipe or exception filter stands in the way.
 *
 * @returns whether the route could be placed before the body parsers
 */
export function mountOnExpress(
  app: ExpressApp,
  path: string,
  webhooks: WebhooksLike<ExpressRequest>,
  tenant: ReadTenant,
): boolean {
  const readTenant = (tenant as ((req: ExpressRequest) => unknown) | undefined) ?? tenantParameter;
  app.all(path, function pixhookWebhooks(req, res, next) {
    webhooks
      .handle({
        method: req.method,
        headers: req.headers,
        body: nodeBodyReader(req, rawCopyOf(req.body, req.rawBody), HINT),
        request: req,
        tenant: tenantFrom(readTenant, req),
      })
      .then(
        (result) => sendAnswer(res, result, next),
        (error: unknown) => failAnswer(res, error, next),
      );
  });
  // Express 5 keeps its router at app.router, Express 4 at app._router; Nest reads the same stack.
  const stack = app.router?.stack ?? app._router?.stack;
  if (!Array.isArray(stack)) return false;
  const firstParser = stack.findIndex((layer) => BODY_PARSERS.has(layer?.handle?.name ?? ''));
  if (firstParser < 0) return true; // no body parser (bodyParser: false): nothing to get ahead of
  const ours = stack[stack.length - 1];
  if (ours?.route === undefined) return false;
  stack.pop();
  stack.splice(firstParser, 0, ours);
  return true;
}

/**
 * Registers `@pixhook/fastify` on the Fastify instance under Nest: its raw-body parser lives in
 * the plugin's own context, so the app's other routes keep Nest's parsers.
 */
export function mountOnFastify(instance: FastifyLike, path: string, webhooks: WebhooksLike, tenant: ReadTenant): void {
  // The plugin reads the `:tenant` parameter itself when no tenant option is given.
  instance.register(pixhookFastify, tenant === undefined ? { webhooks, path } : { webhooks, path, tenant });
}
