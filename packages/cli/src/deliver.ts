import http from 'node:http';
import https from 'node:https';
import { headersFromRaw } from './io/raw-headers.js';
import { DEFAULT_DEADLINE_SECONDS } from './schedule.js';

/** What one delivery attempt sends. */
export interface DeliveryRequest {
  /** The receiver's URL. */
  url: string;
  /** The exact body that was signed. */
  body: string;
  /** The four delivery headers (lower-case names), as `createSignedRequest` builds them. */
  headers: Record<string, string>;
  /** Seconds the receiver has to answer; @default DEFAULT_DEADLINE_SECONDS (10) */
  deadlineSeconds?: number;
}

/** How one attempt ended. `ok` is the spec's success: a 2xx within the deadline. */
export interface AttemptOutcome {
  ok: boolean;
  /** The HTTP status, when an answer came back in time. */
  status?: number;
  /** Milliseconds from sending to the end of the answer (or to the failure). */
  ms: number;
  /** The response body as text (when an answer came back in time). */
  body?: string;
  /** The response's Content-Type (when an answer came back in time and had one). */
  contentType?: string;
  /** The response's headers, lower-case names, repeated ones joined with `, ` (when an answer came back in time). */
  headers?: Record<string, string>;
  /** Why no answer counted: the deadline passed, or the connection failed. */
  failure?: 'timeout' | 'network';
  /** A short description of a network failure, e.g. `ECONNREFUSED`. */
  detail?: string;
}

/**
 * Every header `deliver` sends: the request's own, with a `user-agent` unless it has one, and the
 * body's `content-length`.
 *
 * @example
 * sentHeaders({ url, body: '{}', headers: {} }) // { 'user-agent': 'pixhook-cli', 'content-length': '2' }
 */
export function sentHeaders(request: Pick<DeliveryRequest, 'body' | 'headers'>): Record<string, string> {
  return {
    'user-agent': 'pixhook-cli',
    ...request.headers,
    'content-length': String(Buffer.byteLength(request.body)),
  };
}

/**
 * Makes one delivery attempt the way the service does: POST the signed body with its headers and
 * wait at most the deadline for the whole answer. Never rejects: every outcome is an
 * `AttemptOutcome`.
 *
 * @example
 * const outcome = await deliver({ url, ...createSignedRequest(createTestEvent('image.created'), { secret }) })
 * outcome.ok // true for a 2xx within 10 s
 */
export function deliver(request: DeliveryRequest): Promise<AttemptOutcome> {
  const deadlineMs = (request.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS) * 1_000;
  const url = new URL(request.url);
  // node:http rather than fetch: fetch refuses "bad ports" (6000, 5060, …) a receiver may well use.
  const client = url.protocol === 'https:' ? https : http;
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    const finish = (outcome: Omit<AttemptOutcome, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome, ms: performance.now() - started });
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: sentHeaders(request),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        // The deadline covers the whole answer, body included: the service waits for all of it.
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const contentType = res.headers['content-type'];
          finish({
            ok: status >= 200 && status < 300,
            status,
            body: Buffer.concat(chunks).toString('utf8'),
            ...(contentType === undefined ? {} : { contentType }),
            headers: headersFromRaw(res.rawHeaders),
          });
        });
        res.on('error', fail);
      },
    );
    function fail(error: NodeJS.ErrnoException) {
      finish(
        timedOut
          ? { ok: false, failure: 'timeout' }
          : { ok: false, failure: 'network', detail: error.code ?? error.message },
      );
    }
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new Error('deadline passed'));
    }, deadlineMs);
    req.on('error', fail);
    req.end(request.body);
  });
}
