/**
 * Headers from Node's raw list (`rawHeaders`), as they were on the wire: lower-case names,
 * repeated ones joined with `, ` as HTTP allows, in a null-prototype object (a header named
 * `__proto__` is just a header).
 *
 * @example
 * headersFromRaw(['Content-Type', 'application/json', 'X-A', '1', 'x-a', '2']) // { 'content-type': 'application/json', 'x-a': '1, 2' }
 */
export function headersFromRaw(raw: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}
