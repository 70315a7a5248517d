/** Checks shared by every options object in pixhook: unknown keys, and how a wrong value is named. */

const NUMERIC = /^[0-9.eE+\- ]{0,24}$/;

/** `typeof`, with `null` and arrays told apart, for error messages. */
export function describeType(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  // A string is shown only when it looks like a number: it may be a secret passed in the wrong place.
  if (typeof value === 'string') {
    return NUMERIC.test(value) ? `the string ${JSON.stringify(value)}` : `a string of ${value.length} characters`;
  }
  if (typeof value === 'number') return `the number ${value}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Edit distance, for "did you mean" hints. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min(
        current + 1,
        (row[j - 1] as number) + 1,
        previous + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1),
      );
      previous = current;
    }
  }
  return row[b.length] as number;
}

/**
 * Throws a TypeError naming the closest valid option for every key of `options` not in `names`.
 * @example assertKnownOptions({ tolerence: 300 }, ['tolerance'], 'pixhook: new Webhooks(options)')
 */
export function assertKnownOptions(options: object, names: readonly string[], owner: string): void {
  for (const key of Object.keys(options)) {
    if (names.includes(key)) continue;
    let best: string | undefined;
    for (const name of names) if (best === undefined || distance(key, name) < distance(key, best)) best = name;
    const hint =
      best !== undefined && distance(key, best) <= Math.max(2, Math.floor(best.length / 3))
        ? ` Did you mean "${best}"?`
        : '';
    const known = names.length > 0 ? ` Options: ${names.join(', ')}.` : ' It takes none yet.';
    throw new TypeError(`${owner} has no option ${JSON.stringify(key)}.${hint}${known}`);
  }
}
