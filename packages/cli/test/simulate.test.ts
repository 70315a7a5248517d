import { ensureBuilt, run } from '@pixhook/test-helpers/cli';
import { failFirst, type Receiver, receiver, slow } from '@pixhook/test-helpers/receivers';
import { beforeAll, describe, type TestContext, test } from 'vitest';

const SCHEDULE = [60, 300, 1_800, 7_200, 21_600, 86_400];

/** A receiver, closed when the test that started it ends (its own hook: right in concurrent tests). */
async function start(
  onTestFinished: TestContext['onTestFinished'],
  ...args: Parameters<typeof receiver>
): Promise<Receiver> {
  const r = await receiver(...args);
  onTestFinished(() => r.close());
  return r;
}

beforeAll(() => ensureBuilt());

function gaps(r: Receiver): number[] {
  return r.arrivals.slice(1).map((arrival, i) => arrival.at - (r.arrivals[i]?.at as number));
}

// Concurrently: each test has its own receiver and CLI process, and waits on them.
describe.concurrent('pixhook simulate', () => {
  test('a receiver failing the first 3 attempts: delivered at attempt 4, after delays in order and proportion', async ({
    expect,
    onTestFinished,
  }) => {
    const r = await start(onTestFinished, 'koa', failFirst(3));
    // 1 min, 5 min and 30 min become 100, 500 and 3,000 ms: each delay is longer than the one
    // before plus a busy machine's slack, so the order shows whatever the machine's load.
    const timeScale = 600;
    const { code, stdout } = await run([
      'simulate',
      r.url,
      '--type',
      'image.deleted',
      '--time-scale',
      String(timeScale),
    ]);

    expect(code).toBe(0);
    expect(r.arrivals).toHaveLength(4);
    // Measured on the receiver: 1 min, 5 min and 30 min divided by the time scale.
    const expected = SCHEDULE.slice(0, 3).map((seconds) => (seconds * 1000) / timeScale);
    const measured = gaps(r);
    expect(measured).toHaveLength(3);
    for (const [i, gap] of measured.entries()) {
      const want = expected[i] as number;
      // A timer never fires early (1 ms of rounding aside); the slack covers a failed attempt's
      // round trip and a new connection on a busy machine (the real delays are minutes).
      expect(gap).toBeGreaterThanOrEqual(want - 1);
      expect(gap).toBeLessThan(want + 1_500);
    }
    // The longest delay is the last: 3,000 ms against at most 500 + 1,500 before it.
    expect(measured[1]).toBeLessThan(measured[2] as number);
    // Every attempt is the same delivery of the same event.
    expect(new Set(r.arrivals.map((a) => a.event.id)).size).toBe(1);
    expect(new Set(r.arrivals.map((a) => a.deliveryId)).size).toBe(1);

    expect(stdout).toContain('✗ attempt 1/7  500 Internal Server Error HANDLER_FAILED');
    expect(stdout).toContain('next retry, attempt 2/7, in 1 min');
    expect(stdout).toContain('next retry, attempt 4/7, in 30 min');
    expect(stdout).toMatch(/✓ attempt 4\/7 {2}200 OK in \d+ ms {2}\(retry after 30 min\)/);
    expect(stdout).toContain('delivered at attempt 4 of 7, 36 min after the first (service time)');
  });

  test('a receiver that always fails: auto-disabled after the first attempt and six retries; exit 1', async ({
    expect,
    onTestFinished,
  }) => {
    const r = await start(onTestFinished, 'fastify', failFirst(Number.POSITIVE_INFINITY));
    const { code, stdout } = await run(['simulate', r.url, '--time-scale', '1000000', '--json']);

    expect(code).toBe(1);
    expect(r.arrivals).toHaveLength(7);
    const result = JSON.parse(stdout);
    expect(result.state).toBe('auto-disabled');
    expect(result.attempts.map((a: { delaySeconds: number }) => a.delaySeconds)).toEqual([0, ...SCHEDULE]);
    expect(result.attempts.every((a: { status: number }) => a.status === 500)).toBe(true);
    expect(result.serviceSeconds).toBe(117_360);
    expect(r.arrivals.every((a) => a.deliveryId === result.deliveryId && a.event.id === result.eventId)).toBe(true);
  });

  test('--max-attempts changes the count; the text ends with the endpoint auto-disabled', async ({
    expect,
    onTestFinished,
  }) => {
    const r = await start(onTestFinished, 'express', failFirst(Number.POSITIVE_INFINITY));
    const { code, stdout } = await run(['simulate', r.url, '--time-scale', '1000000', '--max-attempts', '3']);

    expect(code).toBe(1);
    expect(r.arrivals).toHaveLength(3);
    expect(stdout).toContain('✗ attempt 3/3');
    expect(stdout).toContain('endpoint auto-disabled: all 3 attempts failed over 6 min (service time)');
    expect(stdout).toContain('email the account owner');
  });

  test('an answer after the deadline counts as a failed attempt', async ({ expect, onTestFinished }) => {
    // De-duplication off, so the second attempt is not answered 409 while the first still runs.
    // The deadline leaves the prompt second attempt time to answer on a busy machine.
    const r = await start(
      onTestFinished,
      'express',
      slow(4_000, (n) => n === 1),
      { store: false },
    );
    const { code, stdout } = await run(['simulate', r.url, '--time-scale', '1000000', '--deadline', '1.5', '--json']);

    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.state).toBe('delivered');
    expect(result.attempts).toHaveLength(2);
    expect(result.attempts[0]).toMatchObject({ ok: false, failure: 'timeout' });
    expect(result.attempts[0].status).toBeUndefined();
    expect(result.attempts[0].ms).toBeGreaterThanOrEqual(1_500);
    expect(result.attempts[1]).toMatchObject({ ok: true, status: 200 });
    expect(r.arrivals).toHaveLength(2);
  });

  test('a receiver that is always too slow ends auto-disabled, each attempt shown as past the deadline', async ({
    expect,
    onTestFinished,
  }) => {
    const r = await start(onTestFinished, 'koa', slow(400), { store: false });
    const { code, stdout } = await run([
      'simulate',
      r.url,
      '--time-scale',
      '1000000',
      '--deadline',
      '0.1',
      '--max-attempts',
      '2',
    ]);

    expect(code).toBe(1);
    expect(stdout.match(/no answer within the 0\.1 s deadline/g)).toHaveLength(2);
    expect(stdout).toContain('endpoint auto-disabled');
  });

  test('nobody listening: every attempt fails to connect, and the hint is given once', async ({ expect }) => {
    const { code, stdout } = await run([
      'simulate',
      'http://127.0.0.1:1/webhooks',
      '--time-scale',
      '1000000',
      '--max-attempts',
      '3',
    ]);
    expect(code).toBe(1);
    expect(stdout.match(/could not connect \(ECONNREFUSED\)/g)).toHaveLength(3);
    expect(stdout.match(/hint: nothing accepts connections on 127\.0\.0\.1:1/g)).toHaveLength(1);
  });

  test('retries compressed below the handler’s run get 409 IN_FLIGHT: said so, with a smaller --time-scale to try', async ({
    expect,
    onTestFinished,
  }) => {
    // Attempt 1 times out after 2 s while its handler runs 6 s; at this scale every retry comes during
    // that run. (The deadline gives attempt 1 time to reach the handler on a busy machine.)
    const [text, json] = await Promise.all([
      start(
        onTestFinished,
        'koa',
        slow(6_000, (n) => n === 1),
      ),
      start(
        onTestFinished,
        'express',
        slow(6_000, (n) => n === 1),
      ),
    ]);
    const args = ['--time-scale', '1000000', '--deadline', '2'];
    const [printed, scripted] = await Promise.all([
      run(['simulate', text.url, ...args]),
      run(['simulate', json.url, ...args, '--json']),
    ]);

    expect(printed.code).toBe(1);
    expect(printed.stdout).toContain('409 Conflict IN_FLIGHT');
    expect(printed.stdout).toContain('endpoint auto-disabled');
    expect(printed.stdout).toContain(
      'note: attempts 2–7 got 409 IN_FLIGHT: the receiver was still running the handler that attempt 1 started',
    );
    expect(printed.stdout).toContain('because --time-scale 1000000 shrank the retry delays');
    expect(printed.stdout).toContain('Attempt 1 itself failed (no answer within the deadline)');
    const suggested = Number(/a smaller --time-scale, e\.g\. (\d+)/.exec(printed.stdout)?.[1]);
    // The handler ran 6 s: the first delay (60 s) divided by the suggestion must outlast what was seen of it.
    expect(suggested).toBeGreaterThanOrEqual(1);
    expect(suggested).toBeLessThanOrEqual(60_000 / 2 / 100);

    expect(scripted.code).toBe(1);
    const result = JSON.parse(scripted.stdout);
    expect(result.state).toBe('auto-disabled');
    expect(result.inFlight).toMatchObject({ attempts: [2, 3, 4, 5, 6, 7], startedBy: 1, compressed: true });
    expect(result.inFlight.suggestedTimeScale).toBeLessThan(1_000_000);
    expect(result.note).toContain('409 IN_FLIGHT');
  });
});
