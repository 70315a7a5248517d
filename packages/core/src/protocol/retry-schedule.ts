/**
 * The service's retry delays in seconds, in order (spec part 8): 1 min, 5 min, 30 min, 2 h, 6 h,
 * 24 h. Six delays between seven attempts: the first attempt, then one retry after each delay; a
 * delivery whose seventh attempt fails auto-disables the endpoint (spec parts 3 and 7).
 *
 * @example
 * SERVICE_RETRY_DELAYS_SECONDS[0] // 60
 */
export const SERVICE_RETRY_DELAYS_SECONDS: readonly number[] = Object.freeze([60, 300, 1_800, 7_200, 21_600, 86_400]);

/** The attempts the service makes of one delivery: the first and one per retry delay (7). */
export const SERVICE_ATTEMPTS = SERVICE_RETRY_DELAYS_SECONDS.length + 1;

/** When each attempt is sent, in seconds after the first: 0, 60, 360, 2 160, 9 360, 30 960, 117 360. */
const OFFSETS: readonly number[] = SERVICE_RETRY_DELAYS_SECONDS.reduce<number[]>(
  (offsets, delay) => {
    offsets.push((offsets[offsets.length - 1] as number) + delay);
    return offsets;
  },
  [0],
);

/** What pixhook can tell of a delivery's place in the service's retry schedule. */
export interface AttemptEstimate {
  /** The attempt it most likely is: 1 (the first) to 7 (the last before auto-disable). */
  readonly attempt: number;
  /** Attempts the service still makes of this delivery if this one fails: 6 down to 0. */
  readonly attemptsLeft: number;
  /**
   * When the next attempt is due if this one fails, in Unix seconds on the service's clock
   * (`created` plus the schedule); undefined after the last attempt: the endpoint is then disabled.
   */
  readonly nextAttemptAt: number | undefined;
}

/**
 * The attempt a delivery most likely is, from the event's signed `created` and the signature's
 * signed `t` (both written by the service's clock, so this server's clock does not enter): the
 * scheduled attempt nearest to `t − created`, halfway between two attempts counting as the later.
 * An attempt the service sent late by more than half the gap to the next reads as the next one; a
 * `t` before `created` reads as the first.
 *
 * @example
 * estimateAttempt(1_700_000_000, 1_700_000_000 + 117_360) // { attempt: 7, attemptsLeft: 0, nextAttemptAt: undefined }
 */
export function estimateAttempt(created: number, timestamp: number): AttemptEstimate {
  const elapsed = timestamp - created;
  let attempt = 1;
  while (attempt < OFFSETS.length) {
    const here = OFFSETS[attempt - 1] as number;
    const next = OFFSETS[attempt] as number;
    if (elapsed < (here + next) / 2) break;
    attempt++;
  }
  const attemptsLeft = SERVICE_ATTEMPTS - attempt;
  return {
    attempt,
    attemptsLeft,
    nextAttemptAt: attemptsLeft > 0 ? created + (OFFSETS[attempt] as number) : undefined,
  };
}
