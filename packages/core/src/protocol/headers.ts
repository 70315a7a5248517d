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
