type Fields = Record<string, unknown>;
const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null;

/**
 * The request headers of a Lambda event as one object with lower-case names. Where the event has
 * `multiValueHeaders` (REST APIs always, ALB with multi-value headers on) every value of a name is
 * kept and they are joined with ", ", as Node joins a repeated header: a second X-Service-Signature
 * then makes a second `t` (rejected as malformed), never a bypass. Names that differ only in case
 * are joined the same way rather than one of them dropped. `headers` fills in what
 * `multiValueHeaders` lacks (it holds only the last value of a repeated header).
 */
export function eventHeaders(single: unknown, multi: unknown): Record<string, string> {
  // No prototype: a header named __proto__ stays a header. One object, values joined as they come
  // (a Map of arrays joined at the end cost twice as much: the bench's Lambda rows).
  const headers: Record<string, string> = Object.create(null);
  const add = (key: string, value: string) => {
    const before = headers[key];
    headers[key] = before === undefined ? value : `${before}, ${value}`;
  };
  let fromMulti: Set<string> | undefined;
  if (isObject(multi)) {
    fromMulti = new Set();
    for (const name in multi) {
      const list = multi[name];
      if (!Array.isArray(list)) continue;
      const key = name.toLowerCase();
      for (const value of list) {
        if (typeof value !== 'string') continue;
        add(key, value);
        fromMulti.add(key);
      }
    }
  }
  if (isObject(single)) {
    for (const name in single) {
      const value = single[name];
      const key = name.toLowerCase();
      if (typeof value === 'string' && !fromMulti?.has(key)) add(key, value);
    }
  }
  return headers;
}
