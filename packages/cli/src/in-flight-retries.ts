import { errorCode } from './io/output.js';
import { formatDuration } from './schedule.js';
import type { AttemptRecord } from './simulate-delivery.js';

/** Retries that found the event still being processed by an earlier attempt's handler. */
export interface InFlightRetries {
  /** The attempts answered 409 IN_FLIGHT. */
  attempts: number[];
  /** The attempt whose handler was still running (the last attempt before the first 409 that got no 409). */
  startedBy: number;
  /** That handler ran at least this long: from its attempt's sending to the last 409 it caused. */
  ranAtLeastMs: number;
  /** True when `timeScale` shortened the delays, which is then the likely cause. */
  compressed: boolean;
  /** A time scale whose first retry delay outlasts that run twice over (when `compressed`). */
  suggestedTimeScale?: number;
}

function isInFlight(attempt: AttemptRecord): boolean {
  return attempt.status === 409 && errorCode(attempt.body) === 'IN_FLIGHT';
}

/** The largest of 1, 2, 5, 10, 20, 50, … that is at most `limit` (at least 1). */
function roundDown(limit: number): number {
  if (limit < 1) return 1;
  const power = 10 ** Math.floor(Math.log10(limit));
  return [5, 2, 1].map((step) => step * power).find((value) => value <= limit) ?? power;
}

/**
 * Finds retries that a pixhook receiver answered 409 IN_FLIGHT: its handler for an earlier
 * attempt of the same event was still running. With `--time-scale` that is usually an artefact:
 * a 1 min delay shrunk to milliseconds is shorter than the handler's run, where the real retry
 * would have found the event completed (200) or released (run again).
 *
 * @example
 * const found = findInFlightRetries(result.attempts, 3600)
 * found?.suggestedTimeScale // e.g. 20
 */
export function findInFlightRetries(attempts: AttemptRecord[], timeScale: number): InFlightRetries | undefined {
  const first = attempts.findIndex(isInFlight);
  if (first < 1) return undefined;
  const origin = attempts[first - 1] as AttemptRecord;
  const started = Date.parse(origin.sentAt);
  const inFlight: number[] = [];
  let ranAtLeastMs = 0;
  for (const attempt of attempts.slice(first)) {
    if (!isInFlight(attempt)) break;
    inFlight.push(attempt.attempt);
    ranAtLeastMs = Math.max(ranAtLeastMs, Date.parse(attempt.sentAt) - started);
  }
  const found: InFlightRetries = {
    attempts: inFlight,
    startedBy: origin.attempt,
    ranAtLeastMs,
    compressed: timeScale > 1,
  };
  if (found.compressed) {
    // The first retry after the run began must outlast it; twice over, since the run was still going.
    const firstDelayMs = (attempts[first] as AttemptRecord).delaySeconds * 1_000;
    found.suggestedTimeScale = Math.min(roundDown(firstDelayMs / (2 * Math.max(ranAtLeastMs, 1))), timeScale);
  }
  return found;
}

function list(numbers: number[]): string {
  const last = numbers[numbers.length - 1] as number;
  const contiguous = numbers.length > 2 && last - (numbers[0] as number) === numbers.length - 1;
  return contiguous ? `${numbers[0]}–${last}` : numbers.join(', ');
}

/** What the finding means, for people. */
export function describeInFlightRetries(found: InFlightRetries, attempts: AttemptRecord[], timeScale: number): string {
  const which = `attempt${found.attempts.length > 1 ? 's' : ''} ${list(found.attempts)}`;
  const origin = attempts[found.startedBy - 1] as AttemptRecord;
  const ran = `seen running for at least ${formatDuration(found.ranAtLeastMs)}`;
  const head = `${which} got 409 IN_FLIGHT: the receiver was still running the handler that attempt ${found.startedBy} started (${ran})`;
  const code = origin.status === undefined ? undefined : errorCode(origin.body);
  const how =
    origin.failure === 'timeout' ? 'no answer within the deadline' : `${origin.status}${code ? ` ${code}` : ''}`;
  const originFailed = origin.ok
    ? ''
    : ` Attempt ${found.startedBy} itself failed (${how}) while its handler went on: that happens at any time scale.`;
  const firstDelay = (attempts[(found.attempts[0] as number) - 1] as AttemptRecord).delaySeconds * 1_000;
  if (!found.compressed) {
    return `${head}, after the full retry delay. The real service would get the same answers: make the handler answer sooner (answer first, do long work in a queue).${originFailed}`;
  }
  if (found.ranAtLeastMs * 2 > firstDelay) {
    return `${head}, about as long as the real first delay (${formatDuration(firstDelay)}): the real service may get the same answers. Make the handler answer sooner (answer first, do long work in a queue), and run again with --time-scale 1 to check.${originFailed}`;
  }
  const longest = Math.max(...found.attempts.map((n) => (attempts[n - 1] as AttemptRecord).delaySeconds)) * 1_000;
  const suggested = found.suggestedTimeScale as number;
  return `${head}, because --time-scale ${timeScale} shrank the retry delays to ${formatDuration(longest / timeScale)}${
    found.attempts.length > 1 ? ' at most' : ''
  }. At the real delays (${formatDuration(firstDelay)} first) that run would likely have ended before the retry, so this outcome comes from the compression, not from the receiver. Run again with a smaller --time-scale, e.g. ${suggested}, so the first delay (${formatDuration(firstDelay / suggested)}) outlasts the handler (it may run longer than was seen: if retries still get 409 IN_FLIGHT, lower it again).${originFailed}`;
}
