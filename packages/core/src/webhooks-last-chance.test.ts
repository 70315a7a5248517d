/**
 * The last-chance alarm, with the clock injected: at each attempt of the service's schedule (spec
 * part 8), a failed answer raises `ENDPOINT_AT_RISK` for the 6th and 7th attempts only, with the
 * time left; and the `logger` option, which receives pixhook's own lines.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type ErrorContext,
  estimateAttempt,
  SERVICE_ATTEMPTS,
  SERVICE_RETRY_DELAYS_SECONDS,
  Webhooks,
  type WebhooksLogger,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_last_chance_3b4c';
const CREATED = 1_790_000_000;
/** When each attempt is sent, in seconds after the first. */
const OFFSETS = [0];
for (const delay of SERVICE_RETRY_DELAYS_SECONDS) OFFSETS.push((OFFSETS.at(-1) as number) + delay);

afterEach(() => {
  vi.restoreAllMocks();
});

/** A logger with pino's shape that keeps what it is given. */
function recording() {
  const calls: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const logger: WebhooksLogger = {
    error: (fields, message) => void calls.push({ level: 'error', fields, message }),
    warn: (fields, message) => void calls.push({ level: 'warn', fields, message }),
  };
  return { logger, calls };
}

/**
 * A delivery of an event created at CREATED, signed `afterSeconds` later, received at that moment;
 * pixhook's own lines go to a recording logger unless `logger` is given (`null`: the default, console).
 */
async function deliverAt(
  afterSeconds: number,
  handler: () => unknown,
  logger: WebhooksLogger | null = recording().logger,
) {
  const t = CREATED + afterSeconds;
  const webhooks = new Webhooks({ secret: SECRET, now: () => t * 1000 + 400, ...(logger ? { logger } : {}) });
  const heard: { error: WebhookVerificationError; context: ErrorContext }[] = [];
  webhooks.onError((error, context) => void heard.push({ error, context }));
  webhooks.on('image.created', handler);
  const event = createTestEvent('image.created', { id: 'img_1' }, { id: 'evt_last_chance_1', created: CREATED });
  const { headers, body } = createSignedRequest(event, { secret: SECRET, timestamp: t, deliveryId: 'dlv_7' });
  const answer = await webhooks.handle({ method: 'POST', headers, body, request: { from: 'test' } });
  return { answer, heard, codes: heard.map((h) => h.error.code) };
}

const fail = () => {
  throw new Error('downstream is down');
};

describe('estimateAttempt', () => {
  it('reads each scheduled attempt as itself, and a late one up to halfway to the next as itself too', () => {
    expect(SERVICE_ATTEMPTS).toBe(7);
    expect(OFFSETS).toEqual([0, 60, 360, 2_160, 9_360, 30_960, 117_360]);
    OFFSETS.forEach((offset, i) => {
      expect(estimateAttempt(CREATED, CREATED + offset).attempt).toBe(i + 1);
      const halfway = i < OFFSETS.length - 1 ? (offset + (OFFSETS[i + 1] as number)) / 2 : offset + 1e6;
      expect(estimateAttempt(CREATED, CREATED + Math.ceil(halfway) - 1).attempt).toBe(i + 1);
    });
    // Halfway between the 6th (8.6 h) and the 7th (32.6 h) reads as the 7th.
    expect(estimateAttempt(CREATED, CREATED + 74_160)).toEqual({
      attempt: 7,
      attemptsLeft: 0,
      nextAttemptAt: undefined,
    });
    expect(estimateAttempt(CREATED, CREATED + 74_159)).toEqual({
      attempt: 6,
      attemptsLeft: 1,
      nextAttemptAt: CREATED + 117_360,
    });
    // A t before created (clocks apart on the service's side) reads as the first.
    expect(estimateAttempt(CREATED, CREATED - 500)).toEqual({
      attempt: 1,
      attemptsLeft: 6,
      nextAttemptAt: CREATED + 60,
    });
  });
});

describe('the last-chance alarm', () => {
  it.each(OFFSETS.map((offset, i) => [i + 1, offset] as const))(
    'attempt %i (sent %i s after the first) answered 500',
    async (attempt, offset) => {
      const { logger, calls } = recording();
      const { answer, heard, codes } = await deliverAt(offset, fail, logger);
      expect(answer.status).toBe(500);
      if (attempt < 6) {
        expect(codes).toEqual(['HANDLER_FAILED']);
        expect(calls).toEqual([]);
        return;
      }
      expect(codes).toEqual(['HANDLER_FAILED', 'ENDPOINT_AT_RISK']);
      // Logged too, although onError listens: the alarm must be seen.
      expect(calls.map((c) => `${c.level} ${c.fields.code}`)).toEqual(['error ENDPOINT_AT_RISK']);
      const alarm = heard[1] as (typeof heard)[number];
      expect(alarm.context).toMatchObject({ deliveryId: 'dlv_7', request: { from: 'test' } });
      expect(alarm.context.event?.id).toBe('evt_last_chance_1');
      expect(alarm.error.message).toContain(`attempt ${attempt} of 7 of event evt_last_chance_1 (image.created)`);
      expect(alarm.error.message).toContain('pixhook answered 500');
      if (attempt === 6) {
        // The 7th is due 24 h after this one; the clock reads 0.4 s past t.
        expect(alarm.error.message).toContain('tries once more, in about 23 h 59 min, and if');
      } else {
        expect(alarm.error.message).toContain('now auto-disables this endpoint');
        expect(alarm.error.message).toContain('enable the endpoint again');
      }
    },
  );

  it('says "within a minute" when the next attempt is due that soon (an attempt the service sent late)', async () => {
    // Attempt 6 sent 24 h late: still read as the 6th (the 7th reads from 20 h 36 min), next due now.
    const t = CREATED + 74_159;
    const { logger, calls } = recording();
    // 30 s before the 7th attempt is due; the tolerance is off, as the clock is not t.
    const logged = new Webhooks({ secret: SECRET, now: () => (CREATED + 117_330) * 1000, tolerance: false, logger });
    logged.on('image.created', fail);
    const event = createTestEvent('image.created', {}, { created: CREATED });
    const { headers, body } = createSignedRequest(event, { secret: SECRET, timestamp: t });
    expect((await logged.handle({ method: 'POST', headers, body })).status).toBe(500);
    expect(calls.find((c) => c.fields.code === 'ENDPOINT_AT_RISK')?.message).toContain('attempt 6 of 7 of event');
    expect(calls.find((c) => c.fields.code === 'ENDPOINT_AT_RISK')?.message).toContain(
      'the service tries once more, within a minute, and if that attempt fails too',
    );
  });

  it('is not raised for a 2xx answer to the last attempt, nor for a refusal it cannot estimate', async () => {
    const { answer, codes } = await deliverAt(117_360, () => {});
    expect(answer.status).toBe(200);
    expect(codes).toEqual([]);
    // A forged delivery of an old event: nothing signed to estimate from, so no alarm.
    const webhooks = new Webhooks({ secret: SECRET, now: () => (CREATED + 117_360) * 1000 });
    const heard: string[] = [];
    webhooks.onError((error) => void heard.push(error.code));
    const event = createTestEvent('image.created', {}, { created: CREATED });
    const { headers, body } = createSignedRequest(event, { secret: 'whsec_forger', timestamp: CREATED + 117_360 });
    expect((await webhooks.handle({ method: 'POST', headers, body })).status).toBe(400);
    expect(heard).toEqual(['SIGNATURE_MISMATCH']);
  });

  it('counts a 409 and a handler timeout as failed answers too', async () => {
    let release = () => {};
    const t = CREATED + 117_360;
    const { logger, calls } = recording();
    const webhooks = new Webhooks({ secret: SECRET, now: () => t * 1000, handlerTimeoutMs: 50, logger });
    const codes: string[] = [];
    webhooks.onError((error) => void codes.push(error.code));
    webhooks.on('image.created', () => new Promise<void>((resolve) => (release = resolve)));
    const event = createTestEvent('image.created', {}, { created: CREATED });
    const { headers, body } = createSignedRequest(event, { secret: SECRET, timestamp: t });
    const first = await webhooks.handle({ method: 'POST', headers, body });
    const second = await webhooks.handle({ method: 'POST', headers, body });
    release();
    expect([first.status, second.status]).toEqual([503, 409]);
    expect(codes).toEqual(['HANDLER_TIMEOUT', 'ENDPOINT_AT_RISK', 'IN_FLIGHT', 'ENDPOINT_AT_RISK']);
    expect(calls.map((c) => /^pixhook: ENDPOINT_AT_RISK: pixhook answered (\d+) to /.exec(c.message)?.[1])).toEqual([
      '503',
      '409',
    ]);
  });

  it('is logged at error level even when onError listeners are registered', async () => {
    const lines: unknown[][] = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void lines.push(args));
    await deliverAt(117_360, fail, null);
    expect(lines).toHaveLength(1);
    const [line] = lines[0] as [string];
    expect(line).toMatch(
      /^pixhook: ENDPOINT_AT_RISK \(image\.created evt_last_chance_1, delivery dlv_7\): pixhook answered 500/,
    );
    expect(line).not.toContain('register webhooks.onError()');
  });
});

describe('the logger option', () => {
  it('receives the alarm as fields and a message, whoever listens', async () => {
    const { logger, calls } = recording();
    const error = vi.spyOn(console, 'error');
    await deliverAt(117_360, fail, logger);
    expect(error).not.toHaveBeenCalled();
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      level: 'error',
      fields: {
        code: 'ENDPOINT_AT_RISK',
        status: 500,
        eventType: 'image.created',
        eventId: 'evt_last_chance_1',
        deliveryId: 'dlv_7',
      },
    });
    expect(calls[0]?.message).toMatch(/^pixhook: ENDPOINT_AT_RISK: pixhook answered 500 to what is probably attempt 7/);
  });

  it('receives unheard failures with their cause as err, and no 4xx', async () => {
    const { logger, calls } = recording();
    const webhooks = new Webhooks({ secret: SECRET, logger });
    const cause = new Error('downstream is down');
    webhooks.on('image.created', () => {
      throw cause;
    });
    const request = createSignedRequest(createTestEvent('image.created'), { secret: SECRET, deliveryId: 'd\u001b[2J' });
    expect((await webhooks.handle({ method: 'POST', headers: request.headers, body: request.body })).status).toBe(500);
    expect((await webhooks.handle({ method: 'POST', headers: {}, body: '' })).status).toBe(400);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ level: 'error', fields: { code: 'HANDLER_FAILED', err: cause } });
    // The unsigned delivery id is untrusted text: its control characters are escaped.
    expect(calls[0]?.fields.deliveryId).toBe('d\\x1b[2J');
  });

  it('is checked when the Webhooks is built', () => {
    expect(() => new Webhooks({ secret: SECRET, logger: console.log as never })).toThrow(
      /^pixhook: logger must have error\(fields, message\) and warn\(fields, message\) methods/,
    );
    // console has both methods: it fits, as pino does.
    expect(() => new Webhooks({ secret: SECRET, logger: console })).not.toThrow();
  });

  it('a logger that throws changes no answer', async () => {
    const logger: WebhooksLogger = {
      error: () => {
        throw new Error('log sink full');
      },
      warn: () => {},
    };
    const { answer } = await deliverAt(117_360, fail, logger);
    expect(answer.status).toBe(500);
  });
});
