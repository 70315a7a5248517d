/**
 * The service's retry delays in seconds, in order (spec part 8): 1 min, 5 min, 30 min, 2 h, 6 h,
 * 24 h. Six delays between seven attempts: the first attempt, then one retry after each delay.
 *
 * @example
 * RETRY_DELAYS_SECONDS[0] // 60
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = Object.freeze([60, 300, 1_800, 7_200, 21_600, 86_400]);

/**
 * Attempts the service makes before it auto-disables the endpoint: the first one plus one retry
 * per delay. Spec part 3 disables "after the last retry delay has elapsed and the attempt has
 * failed", which is the 7th attempt; the "6 failed attempts" of parts 3, 7 and 8 count the retries.
 *
 * @example
 * DEFAULT_MAX_ATTEMPTS // 7
 */
export const DEFAULT_MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/**
 * Seconds the receiver has to answer 2xx before an attempt counts as failed (spec parts 4, 7, 8).
 *
 * @example
 * DEFAULT_DEADLINE_SECONDS // 10
 */
export const DEFAULT_DEADLINE_SECONDS = 10;

/**
 * The delay, in seconds, before each retry when a delivery may take `maxAttempts` attempts. Past
 * the spec's schedule (more than 7 attempts) the last delay, 24 h, repeats.
 *
 * @param maxAttempts - attempts in all, the first included; @default DEFAULT_MAX_ATTEMPTS (7)
 * @example
 * retryDelays(3) // [60, 300]
 */
export function retryDelays(maxAttempts: number = DEFAULT_MAX_ATTEMPTS): number[] {
  const last = RETRY_DELAYS_SECONDS[RETRY_DELAYS_SECONDS.length - 1] as number;
  return Array.from({ length: Math.max(0, maxAttempts - 1) }, (_, i) => RETRY_DELAYS_SECONDS[i] ?? last);
}

/**
 * A duration for people: `850 ms`, `4.2 s`, `5 min`, `4 min 59 s`, `2 h`, `1 h 30 min`, `24 h`, `3 d 2 h`.
 *
 * @example
 * formatDuration(7_200_000) // '2 h'
 */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Number((ms / 1_000).toFixed(ms < 10_000 ? 2 : 1))} s`;
  const seconds = Math.round(ms / 1_000);
  // Days only from two of them up, so the schedule's last delay reads "24 h" as the spec says.
  const units: [number, string][] = [
    ...(seconds >= 172_800 ? ([[86_400, 'd']] as [number, string][]) : []),
    [3_600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const parts: string[] = [];
  let rest = seconds;
  for (const [size, name] of units) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)} ${name}`);
      rest %= size;
    } else if (parts.length > 0) break;
  }
  return parts.join(' ');
}
