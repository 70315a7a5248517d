import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { receiverUrlProblem, secretProblem } from '@pixhook/cli';
import { type InboxReader, isWebhookVerificationError } from '@pixhook/core';
import { nodeBodyReader } from '@pixhook/core/node';
import { ActionError, playSchedule, replay, sendTestEvent } from './actions.js';
import { refusal } from './guard.js';
import { createInspector } from './inspector.js';
import {
  ConfirmError,
  checkInbox,
  checkSources,
  type DeadLetterSource,
  isProductionPath,
  type Production,
  productionGet,
  productionPost,
  READ_ONLY_MESSAGE,
} from './production.js';
import type { ActionResult, ApiError, ServerEvent } from './protocol.js';
import { endpointRequest, replayRequest, scheduleRequest, sendRequest } from './requests.js';
import { DashboardState } from './state.js';

/** The dashboard's default port: `pixhook listen`'s 4242 is often running beside it. */
export const DEFAULT_PORT = 4343;

/** Options of `startDashboard`; every one may be left out. */
export interface DashboardOptions {
  /** The port on 127.0.0.1; 0 picks a free one (read it from `url`). @default 4343 */
  port?: number | undefined;
  /**
   * The signing secret to start with; the page can set another. It stays in this process: the
   * page never gets it back. @default undefined (the page asks for one)
   */
  secret?: string | undefined;
  /** The receiver URL to start with, http:// or https://. @default undefined (the page asks for one) */
  url?: string | undefined;
  /**
   * The production inbox to show (a `PostgresArchive` from @pixhook/postgres or a `RedisArchive`
   * from @pixhook/redis): the Inbox tab lists, shows and replays its events. The dashboard does not
   * close it. @default undefined (no Inbox tab)
   */
  inbox?: InboxReader | undefined;
  /**
   * Queues whose dead letters to show (`BullMQQueue`, `PgBossQueue`, or anything with their
   * dead-letter methods): the Dead letters tab lists, shows, retries and discards them. The
   * dashboard does not close them. @default [] (no Dead letters tab)
   */
  deadLetters?: readonly DeadLetterSource[] | undefined;
  /**
   * Look without changing anything: every replay, retry and discard is refused (403 `READ_ONLY`)
   * and the page shows no button for them. @default false
   */
  readOnly?: boolean | undefined;
}

/** A running dashboard. */
export interface Dashboard {
  /** The page, e.g. `http://127.0.0.1:4343/`. */
  url: string;
  /** The inspector's receiver URL, e.g. `http://127.0.0.1:4343/inspect`. */
  inspectorUrl: string;
  /** Stops the server: ends the page's event streams and closes every connection. */
  close(): Promise<void>;
}

/**
 * The built page, beside the built server (dist/dashboard); the package's build writes it. Run
 * from its sources (the workspace's tests), the server reads the page built into dist.
 */
const ASSETS = [new URL('./dashboard/', import.meta.url), new URL('../dist/dashboard/', import.meta.url)];

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.js.map': { file: 'app.js.map', type: 'application/json; charset=utf-8' },
  '/styles.css': { file: 'styles.css', type: 'text/css; charset=utf-8' },
};

/** Every answer of the page and its API: nothing else may frame, load or script it. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** The largest API request body: an edited envelope of up to 1 MiB, in JSON. */
const MAX_API_BODY = 2 * 1_048_576;

const HEARTBEAT_MS = 15_000;

/**
 * Starts the dashboard on 127.0.0.1: the page, its JSON API and Server-Sent Events under `/api/`,
 * and the inspector's receiver under `/inspect`. Rejects with a `pixhook: ` message for a bad
 * option, and with Node's error (`code: 'EADDRINUSE'`) when the port is taken.
 *
 * @example
 * const dashboard = await startDashboard({ port: 0, url: 'http://localhost:3000/webhooks' });
 * console.log(dashboard.url); // http://127.0.0.1:43123/
 * await dashboard.close();
 */
export async function startDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
  const { port: wanted, secret, url: receiver, production } = checkOptions(options);
  let state: DashboardState | undefined;
  let inspect: ReturnType<typeof createInspector> | undefined;
  const streams = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (!state || !inspect) return void res.writeHead(503).end();
    const path = (req.url ?? '/').split('?')[0] as string;
    if (path === '/inspect' || path.startsWith('/inspect/')) {
      inspect(req, res).catch((error) => fail(res, error));
      return;
    }
    route(state, production, req, res, path, port, streams).catch((error) => fail(res, error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/`;
  state = new DashboardState(`${url}inspect`, { secret, url: receiver });
  inspect = createInspector(state);
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': still here\n\n');
  }, HEARTBEAT_MS).unref();
  return {
    url,
    inspectorUrl: state.inspectorUrl,
    close: () => stop(server, streams, heartbeat),
  };
}

/** The options with their defaults, or a `pixhook: ` TypeError naming the bad one (never quoting a secret). */
function checkOptions(options: DashboardOptions): {
  port: number;
  secret?: string;
  url?: string;
  production: Production;
} {
  const { port = DEFAULT_PORT, secret, url, inbox, deadLetters, readOnly = false } = options ?? {};
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new TypeError(`pixhook: port must be a whole number from 0 to 65535 (0: any free one), not ${String(port)}.`);
  }
  if (typeof readOnly !== 'boolean') throw new TypeError('pixhook: readOnly must be true or false.');
  const production: Production = { inbox: checkInbox(inbox), deadLetters: checkSources(deadLetters), readOnly };
  const checked: { port: number; secret?: string; url?: string; production: Production } = { port, production };
  if (secret !== undefined) {
    const problem = typeof secret === 'string' ? secretProblem(secret) : 'the secret must be a string.';
    if (problem) throw new TypeError(`pixhook: The signing secret: ${problem}`);
    checked.secret = secret;
  }
  if (url !== undefined) {
    const problem = typeof url === 'string' ? receiverUrlProblem(url) : 'expected a string.';
    if (problem) throw new TypeError(`pixhook: The receiver URL: ${problem}`);
    checked.url = new URL(url).href;
  }
  return checked;
}

async function route(
  state: DashboardState,
  production: Production,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  port: number,
  streams: Set<ServerResponse>,
): Promise<void> {
  const refused = refusal(req, port);
  if (refused) {
    // A person who followed a link (or a form) from another page gets a page, an API caller JSON.
    if (isNavigation(req)) return refusedPage(res, port, refused);
    return json(res, 403, error('FORBIDDEN', refused));
  }
  if (isProductionPath(path)) return productionRoute(production, req, res, path);
  if (req.method === 'GET' || req.method === 'HEAD') {
    if (path === '/api/state') return json(res, 200, state.snapshot());
    if (path === '/api/events') return events(state, req, res, streams);
    const asset = FILES[path];
    if (asset) return serveAsset(res, asset);
    return json(res, 404, error('NOT_FOUND', `Nothing at ${path}.`));
  }
  if (req.method !== 'POST') {
    res.setHeader('allow', 'GET, POST');
    return json(res, 405, error('METHOD_NOT_ALLOWED', 'The dashboard answers GET and POST only.'));
  }
  if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
    return json(res, 415, error('UNSUPPORTED_MEDIA_TYPE', 'Send the request as application/json.'));
  }
  const body = await readJson(req);
  try {
    return json(res, 200, await act(state, path, body));
  } catch (caught) {
    if (!(caught instanceof ActionError)) throw caught;
    return json(res, caught.status, error(caught.code, caught.message));
  }
}

/** `/api/production…`, behind the same guard: GET reads, POST (JSON) changes. */
async function productionRoute(
  production: Production,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  try {
    if (req.method === 'GET' || req.method === 'HEAD') {
      const params = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams;
      return json(res, 200, await productionGet(production, path, params));
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'GET, POST');
      return json(res, 405, error('METHOD_NOT_ALLOWED', 'The dashboard answers GET and POST only.'));
    }
    // Read-only refuses every change before reading it.
    if (production.readOnly) return json(res, 403, error('READ_ONLY', READ_ONLY_MESSAGE));
    if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
      return json(res, 415, error('UNSUPPORTED_MEDIA_TYPE', 'Send the request as application/json.'));
    }
    return json(res, 200, await productionPost(production, path, await readJson(req)));
  } catch (caught) {
    if (caught instanceof ConfirmError) {
      return json(res, caught.status, { ...error(caught.code, caught.message), count: caught.count });
    }
    if (!(caught instanceof ActionError)) throw caught;
    return json(res, caught.status, error(caught.code, caught.message));
  }
}

async function act(state: DashboardState, path: string, body: unknown): Promise<ActionResult> {
  switch (path) {
    case '/api/endpoint': {
      const { url, secret } = endpointRequest(body);
      return { endpoint: state.setEndpoint(url, secret) };
    }
    case '/api/endpoint/enable':
      return { endpoint: state.enable() };
    case '/api/send':
      return { attempts: await sendTestEvent(state, sendRequest(body)) };
    case '/api/replay':
      return { attempts: [await replay(state, replayRequest(body))] };
    case '/api/schedule':
      return { run: playSchedule(state, scheduleRequest(body)) };
    default:
      throw new ActionError(404, 'NOT_FOUND', `There is no action at ${path}.`);
  }
}

/** `GET /api/events`: a snapshot, then every change, as Server-Sent Events. */
function events(state: DashboardState, req: IncomingMessage, res: ServerResponse, streams: Set<ServerResponse>) {
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8' });
  // JSON has no raw line breaks, so each event is one `data:` line.
  const send = (event: ServerEvent) => res.write(`data: ${JSON.stringify(event)}\n\n`);
  res.write('retry: 1000\n\n');
  send({ kind: 'snapshot', snapshot: state.snapshot() });
  const unsubscribe = state.subscribe(send);
  streams.add(res);
  req.on('close', () => {
    unsubscribe();
    streams.delete(res);
  });
}

async function serveAsset(res: ServerResponse, asset: { file: string; type: string }): Promise<void> {
  let content: Buffer | undefined;
  for (const folder of ASSETS) {
    content = await readFile(new URL(asset.file, folder)).catch(() => undefined);
    if (content) break;
  }
  if (!content) {
    return json(
      res,
      500,
      error('NOT_BUILT', 'The dashboard’s page is not built: run `pnpm build` in the pixhook repository.'),
    );
  }
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type }).end(content);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let bytes: Uint8Array | string;
  try {
    // Core's reader: the size limit from Content-Length or as the bytes come, and a deadline.
    bytes = await nodeBodyReader(req, undefined, '')(MAX_API_BODY, 10_000);
  } catch (caught) {
    if (!isWebhookVerificationError(caught)) throw caught;
    throw new ActionError(caught.status, caught.code, caught.message);
  }
  try {
    return JSON.parse(typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8'));
  } catch (caught) {
    throw new ActionError(400, 'INVALID_JSON', `The request is not JSON: ${(caught as Error).message}`);
  }
}

/**
 * Whether the browser is loading a page (a link followed, a form posted, an address typed), not a
 * script calling the API: `Sec-Fetch-Mode: navigate`, or, from a browser that does not send it, an
 * `Accept` that asks for HTML.
 */
function isNavigation(req: IncomingMessage): boolean {
  const mode = req.headers['sec-fetch-mode'];
  if (mode !== undefined) return mode === 'navigate';
  return /\btext\/html\b/i.test(req.headers.accept ?? '');
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] as string);
}

/**
 * The 403 of a refused navigation, as a page: open the dashboard's address directly. Its text is
 * the dashboard's own (its address from its port, the refusal's reason), never the request's.
 */
function refusedPage(res: ServerResponse, port: number, reason: string): void {
  const address = `http://127.0.0.1:${port}/`;
  const page = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Open the pixhook dashboard directly</title></head>
<body>
<h1>Open the pixhook dashboard directly</h1>
<p>The dashboard holds a signing secret and sends signed deliveries, so it answers only its own page: a link, a form or a redirect from another page or site is refused.</p>
<p>Open <code>${escapeHtml(address)}</code> yourself: type or paste it into the address bar.</p>
<p><small>Why: ${escapeHtml(reason)}</small></p>
</body>
</html>
`;
  res.writeHead(403, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' }).end(page);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8' }).end(body);
}

function error(code: string, message: string): ApiError {
  return { error: { code, message } };
}

/** An unexpected failure: a 500 saying so, never the process. */
function fail(res: ServerResponse, caught: unknown): void {
  if (caught instanceof ActionError) {
    json(res, caught.status, error(caught.code, caught.message));
  } else if (res.headersSent) {
    res.destroy();
  } else {
    json(res, 500, error('INTERNAL_ERROR', `The dashboard failed: ${(caught as Error)?.message ?? String(caught)}`));
  }
}

function stop(server: Server, streams: Set<ServerResponse>, heartbeat: NodeJS.Timeout): Promise<void> {
  clearInterval(heartbeat);
  for (const stream of streams) stream.end();
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
