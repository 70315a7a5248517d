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
  const values = new Map<string, string[]>();
  const add = (name: string, value: string) => {
    const list = values.get(name);
    if (list) list.push(value);
    else values.set(name, [value]);
  };
  const fromMulti = new Set<string>();
  if (isObject(multi)) {
    for (const [name, list] of Object.entries(multi)) {
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
    for (const [name, value] of Object.entries(single)) {
      const key = name.toLowerCase();
      if (typeof value === 'string' && !fromMulti.has(key)) add(key, value);
    }
  }
  // fromEntries defines own properties, so a header named __proto__ stays a header.
  return Object.fromEntries(Array.from(values, ([name, list]) => [name, list.join(', ')]));
}
