/** Request headers as pixhook accepts them: Node's lower-case object, or a Web `Headers`. */
export type HeadersInput =
  | Record<string, string | string[] | number | undefined>
  | { get(name: string): string | null };

/** The four headers every delivery carries (spec part 4), lower-case. */
export const HEADER = {
  signature: 'x-service-signature',
  event: 'x-service-event',
  delivery: 'x-service-delivery',
} as const;

/**
 * One header's value, or undefined. `name` must be lower-case. Repeated headers are joined with
 * ", " as Node does, so a second X-Service-Signature makes a second `t` (rejected), not a bypass.
 */
export function getHeader(headers: HeadersInput, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | number | undefined>;
  let value = record[name];
  if (value === undefined) {
    // Be forgiving with hand-built objects whose names are not lower-case.
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.join(', ');
  return String(value);
}

/**
 * What pixhook reads of a request's headers: the delivery's three headers and its declared size.
 * The pipeline reads them once, when the request arrives, and passes this along.
 */
export interface DeliveryHeaders {
  /** X-Service-Signature: `t=…,v1=…`. */
  readonly signature: string | undefined;
  /** X-Service-Event: must equal the signed body's type. */
  readonly event: string | undefined;
  /** X-Service-Delivery: the delivery's id (not signed). */
  readonly delivery: string | undefined;
  /** Content-Length, as sent; undefined too where it was not asked for. */
  readonly contentLength: string | undefined;
}

/**
 * Reads what pixhook needs of `headers`, once: the three delivery headers, and Content-Length when
 * `withSize` (the pipeline refuses a declared oversize body with it; `verify()` has the bytes and
 * does not ask: a header that is absent costs a scan of every name in a plain object).
 */
export function readDeliveryHeaders(headers: HeadersInput, withSize = false): DeliveryHeaders {
  // Node's header object, as every adapter on Node passes it: each name read once, at a fixed key
  // (a monomorphic property load instead of four keyed lookups by a variable name). Anything else
  // (a `Headers`, a header absent or repeated, names not in lower case) is read by `getHeader`.
  if (typeof (headers as { get?: unknown }).get !== 'function') {
    const record = headers as Record<string, unknown>;
    const signature = record['x-service-signature'];
    const event = record['x-service-event'];
    const delivery = record['x-service-delivery'];
    if (typeof signature === 'string' && typeof event === 'string' && typeof delivery === 'string') {
      if (!withSize) return { signature, event, delivery, contentLength: undefined };
      const contentLength = record['content-length'];
      if (typeof contentLength === 'string') return { signature, event, delivery, contentLength };
    }
  }
  return {
    signature: getHeader(headers, HEADER.signature),
    event: getHeader(headers, HEADER.event),
    delivery: getHeader(headers, HEADER.delivery),
    contentLength: withSize ? getHeader(headers, 'content-length') : undefined,
  };
}
