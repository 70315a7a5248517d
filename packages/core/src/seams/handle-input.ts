import type { HeadersInput } from '../protocol/headers.js';

/**
 * Reads a request body with a byte limit and a deadline, for adapters. Throw a
 * `WebhookVerificationError` (`PAYLOAD_TOO_LARGE`, `BODY_TIMEOUT` from `bodyTimeout(ms)`,
 * `RAW_BODY_UNAVAILABLE`) to answer with it; any other error answers 400 `BODY_UNREADABLE`, except
 * one whose `status` or `statusCode` is 413 (raw-body's, Fastify's, or the reader's own), which
 * answers `PAYLOAD_TOO_LARGE`. A reader may also stop as soon as it has more than `limit` bytes and
 * return those: the pipeline answers 413 for any longer body. When `timeoutMs` is a number, the
 * reader must give up once the body has not fully arrived that many milliseconds after it started,
 * holding nothing more, and stop the stream by then at the latest. A reader that already holds the
 * body may return it directly instead of a promise (and throw instead of rejecting).
 */
export type BodyReader = (
  limit: number,
  timeoutMs: number | undefined,
) => Promise<Uint8Array | string> | Uint8Array | string;

/** One request, as an adapter hands it to `webhooks.handle()`. */
export interface HandleInput<TRequest = unknown> {
  /** The HTTP method; anything but `POST` answers 405. Omitted: taken as `POST`. */
  method?: string | undefined;
  /** Node's lower-case header object, or a `Headers`. */
  headers: HeadersInput;
  /** The raw body (a string is taken as UTF-8), or a reader that fetches it within the limit. */
  body?: Uint8Array | string | BodyReader | undefined;
  /** Passed to handlers as `context.request`. */
  request?: TRequest;
  /**
   * Whose delivery this is, when secrets are looked up per tenant (`secret` as a function): the
   * adapters pass their `tenant` option's answer (by default a `:tenant` path parameter). Unsigned:
   * it only chooses which secret must match. Ignored when `secret` is not a function.
   */
  tenant?: string | undefined;
}

/** The answer for an adapter to send, exactly as it is. */
export interface WebhookResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * For adapters: the answer of a `tenant` option (`read`, called with the adapter's request) when it
 * is a string; undefined when it is anything else or throws (core then refuses the request as
 * `SIGNATURE_MISMATCH`, as for an unknown tenant). A promise (an async function) gives undefined
 * too, and its rejection is not left unhandled: the tenant must be known at once.
 * @example tenant: tenantFrom(options.tenant ?? ((req) => req.params?.tenant), req)
 */
export function tenantFrom<TRequest>(read: (request: TRequest) => unknown, request: TRequest): string | undefined {
  try {
    const tenant = read(request);
    if (typeof tenant === 'string') return tenant;
    if (typeof (tenant as PromiseLike<unknown> | undefined)?.then === 'function') {
      Promise.resolve(tenant).catch(() => {});
    }
    return undefined;
  } catch {
    return undefined;
  }
}
