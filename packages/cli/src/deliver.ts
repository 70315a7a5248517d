import http from 'node:http';
import https from 'node:https';
import { headersFromRaw } from './io/raw-headers.js';
import { DEFAULT_DEADLINE_SECONDS } from './schedule.js';

/**
 * The most bytes of a receiver's answer `deliver` reads and keeps: 1 MiB. The service does not use
 * the answer's body (spec part 4); past this bound the rest is not read (the connection is closed)
 * and the attempt counts by its status, so a huge or endless answer cannot fill the memory of the
 * CLI or the dashboard.
 *
 * @example
 * DEFAULT_MAX_ANSWER_BYTES // 1048576
 */
export const DEFAULT_MAX_ANSWER_BYTES = 1_048_576;

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
  /** The most bytes of the answer to read and keep; @default DEFAULT_MAX_ANSWER_BYTES (1 MiB) */
  maxAnswerBytes?: number;
}

/** How one attempt ended. `ok` is the spec's success: a 2xx within the deadline. */
export interface AttemptOutcome {
  ok: boolean;
  /** The HTTP status, when an answer came back in time. */
  status?: number;
  /** Milliseconds from sending to the end of the answer (or to the failure). */
  ms: number;
  /**
   * The response body as text (when an answer came back in time): all of it, or its first
   * `maxAnswerBytes` when `truncated` (cut before a character the bound would split).
   */
  body?: string;
  /** The answer was longer than `maxAnswerBytes`: `body` is its prefix, and the rest was not read. */
  truncated?: boolean;
  /** With `truncated`, the bytes not read, when the answer's Content-Length said its size. */
  moreBytes?: number;
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
 * wait at most the deadline for the whole answer, of which it reads at most `maxAnswerBytes` (1 MiB;
 * a longer answer keeps its prefix, `truncated`). Never rejects: every outcome is an
 * `AttemptOutcome` (a `maxAnswerBytes` that is not a whole number throws a TypeError at once).
 *
 * @example
 * const outcome = await deliver({ url, ...createSignedRequest(createTestEvent('image.created'), { secret }) })
 * outcome.ok // true for a 2xx within 10 s
 */
export function deliver(request: DeliveryRequest): Promise<AttemptOutcome> {
  const deadlineMs = (request.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS) * 1_000;
  const maxBytes = request.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new TypeError(`pixhook: deliver() maxAnswerBytes must be a whole number of bytes, got ${maxBytes}.`);
  }
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
        let kept = 0;
        const answered = (body: Buffer, more?: { moreBytes?: number }) => {
          const status = res.statusCode ?? 0;
          const contentType = res.headers['content-type'];
          finish({
            ok: status >= 200 && status < 300,
            status,
            body: body.toString('utf8'),
            ...(more ? { truncated: true, ...more } : {}),
            ...(contentType === undefined ? {} : { contentType }),
            headers: headersFromRaw(res.rawHeaders),
          });
        };
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          if (kept + chunk.length <= maxBytes) {
            chunks.push(chunk);
            kept += chunk.length;
            return;
          }
          // Over the bound: keep the prefix, read no more, and close the connection.
          chunks.push(chunk.subarray(0, maxBytes - kept));
          const length = Number(res.headers['content-length']);
          const more = Number.isSafeInteger(length) && length > maxBytes ? { moreBytes: length - maxBytes } : {};
          answered(wholeCharacters(Buffer.concat(chunks)), more);
          res.destroy();
          req.destroy();
        });
        // The deadline covers the whole answer (up to the bound), body included.
        res.on('end', () => answered(Buffer.concat(chunks)));
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

/** `bytes` without a UTF-8 character the cut split at its end. */
function wholeCharacters(bytes: Buffer): Buffer {
  let start = bytes.length - 1;
  // Back over continuation bytes (10xxxxxx) to the character's first byte.
  while (start > 0 && bytes.length - start < 4 && ((bytes[start] as number) & 0xc0) === 0x80) start--;
  const lead = bytes[start] as number;
  const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return start >= 0 && bytes.length - start < size ? bytes.subarray(0, start) : bytes;
}
