import { describe, expect, test } from 'vitest';
import { describeInFlightRetries, findInFlightRetries } from './in-flight-retries.js';
import type { AttemptRecord } from './simulate-delivery.js';

const IN_FLIGHT = JSON.stringify({ error: { code: 'IN_FLIGHT', message: 'still being processed' } });
const at = (ms: number) => new Date(1_700_000_000_000 + ms).toISOString();

function attempts(timeScale: number, ...outcomes: Partial<AttemptRecord>[]): AttemptRecord[] {
  const delays = [0, 60, 300, 1_800];
  let clock = 0;
  return outcomes.map((outcome, i) => {
    clock += ((delays[i] as number) * 1_000) / timeScale + (i === 0 ? 0 : 2_000);
    return { attempt: i + 1, sentAt: at(clock), delaySeconds: delays[i] as number, ok: false, ms: 5, ...outcome };
  });
}

describe('findInFlightRetries', () => {
  test('409 IN_FLIGHT after a compressed delay: found, with a time scale whose first delay outlasts the run', () => {
    const list = attempts(
      3_600,
      { failure: 'timeout', ms: 10_000 },
      { status: 409, body: IN_FLIGHT },
      { status: 409, body: IN_FLIGHT },
    );
    const found = findInFlightRetries(list, 3_600);
    expect(found).toMatchObject({ attempts: [2, 3], startedBy: 1, compressed: true });
    // Seen running for ~4.2 s: 60 s / (2 × 4.2 s) ≈ 7.1, rounded down to 5.
    expect(found?.suggestedTimeScale).toBe(5);
    const text = describeInFlightRetries(found!, list, 3_600);
    expect(text).toContain('attempts 2, 3 got 409 IN_FLIGHT');
    expect(text).toContain('e.g. 5, so the first delay (12 s) outlasts the handler');
    expect(text).toContain('Attempt 1 itself failed (no answer within the deadline)');
    expect(text).toContain('shrank the retry delays to 83 ms at most');
  });

  test('in real time a 409 IN_FLIGHT is real: the text says the service would get it too', () => {
    const timedOut = JSON.stringify({ error: { code: 'HANDLER_TIMEOUT', message: '…' } });
    const list = attempts(1, { status: 503, body: timedOut }, { status: 409, body: IN_FLIGHT });
    const found = findInFlightRetries(list, 1);
    expect(found).toMatchObject({ attempts: [2], compressed: false });
    expect(found?.suggestedTimeScale).toBeUndefined();
    const text = describeInFlightRetries(found!, list, 1);
    expect(text).toContain('The real service would get the same answers');
    expect(text).toContain('Attempt 1 itself failed (503 HANDLER_TIMEOUT)');
  });

  test('nothing to say without a 409 IN_FLIGHT, or for a 409 that is not pixhook’s', () => {
    expect(findInFlightRetries(attempts(3_600, { status: 500 }, { ok: true, status: 200 }), 3_600)).toBeUndefined();
    expect(findInFlightRetries(attempts(3_600, { status: 500 }, { status: 409, body: 'busy' }), 3_600)).toBeUndefined();
  });
});
