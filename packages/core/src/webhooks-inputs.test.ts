// Inputs and options from issue 24: a missing raw body given to verify(), a `t` beyond any real
// time, the number of secrets, and what the default log line prints of unsigned header values.
import { describe, expect, it, vi } from 'vitest';
import { describeType, MAX_SECRETS, sign, Webhooks, type WebhookVerificationError } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_inputs_test_1a2b3c';

function thrown(run: () => unknown): WebhookVerificationError {
  try {
    run();
  } catch (error) {
    return error as WebhookVerificationError;
  }
  throw new Error('did not throw');
}

describe('verify() without a raw body', () => {
  const { headers } = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });

  it('verify(undefined, headers) is RAW_BODY_UNAVAILABLE (req.rawBody never set), not SIGNATURE_MISMATCH', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const error = thrown(() => webhooks.verify(undefined as never, headers));
    expect(error.code).toBe('RAW_BODY_UNAVAILABLE');
    expect(error.status).toBe(500);
    expect(error.message).toMatch(/^verify\(\) needs the raw body as received .*got undefined/);
  });

  it('comes before every header check: the setup is wrong whatever the request', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    expect(thrown(() => webhooks.verify(undefined as never, {})).code).toBe('RAW_BODY_UNAVAILABLE');
  });

  it('verifyAsync(undefined, headers) rejects the same way', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    await expect(webhooks.verifyAsync(undefined as never, headers)).rejects.toMatchObject({
      code: 'RAW_BODY_UNAVAILABLE',
    });
  });

  it('an empty string is still a body (verified, then INVALID_JSON)', () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const t = String(Math.floor(Date.now() / 1000));
    const signed = { ...headers, 'x-service-signature': `t=${t},v1=${sign(SECRET, '', t)}` };
    expect(thrown(() => webhooks.verify('', signed)).code).toBe('INVALID_JSON');
  });
});

describe('a t beyond any real time', () => {
  const event = createTestEvent('image.created');
  const body = JSON.stringify(event);
  const headersWith = (t: string) => ({
    'x-service-signature': `t=${t},v1=${sign(SECRET, body, t)}`,
    'x-service-event': event.type,
    'x-service-delivery': 'dlv_huge_t',
  });

  it.each([
    ['one past Number.MAX_SAFE_INTEGER', '9007199254740992'],
    ['400 digits (Infinity as a number)', '9'.repeat(400)],
  ])('%s is MALFORMED_SIGNATURE, with tolerance: false too (no context.timestamp Infinity)', (_name, t) => {
    for (const tolerance of [false, 300] as const) {
      const webhooks = new Webhooks({ secret: SECRET, tolerance });
      const error = thrown(() => webhooks.verify(body, headersWith(t)));
      expect(error.code).toBe('MALFORMED_SIGNATURE');
      expect(error.message).toMatch(/t is beyond any real time/);
    }
  });

  it('the largest safe integer, with leading zeros, is still a timestamp (tolerance: false)', async () => {
    const webhooks = new Webhooks({ secret: SECRET, tolerance: false });
    const t = `000${Number.MAX_SAFE_INTEGER}`;
    expect(webhooks.verify(body, headersWith(t)).id).toBe(event.id);
    let timestamp: number | undefined;
    webhooks.on('image.created', (_event, context) => {
      timestamp = context.timestamp;
    });
    expect((await webhooks.handle({ method: 'POST', headers: headersWith(t), body })).status).toBe(200);
    expect(timestamp).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('the number of secrets is bounded', () => {
  it(`accepts up to MAX_SECRETS (${MAX_SECRETS}) and throws for more, naming the bound`, () => {
    const secrets = Array.from({ length: MAX_SECRETS + 1 }, (_, i) => `whsec_rotation_${i}`);
    expect(MAX_SECRETS).toBe(3);
    expect(() => new Webhooks({ secret: secrets.slice(0, MAX_SECRETS) })).not.toThrow();
    expect(() => new Webhooks({ secret: secrets })).toThrow(
      new RangeError(
        `pixhook: secret has ${MAX_SECRETS + 1} entries; at most ${MAX_SECRETS} are accepted (the new and the old secret while rotating, and one more). Each one costs an HMAC of the whole body for every request that matches none, forged ones included: remove the secrets that are no longer used.`,
      ),
    );
    const many = Array.from({ length: 100 }, (_, i) => `whsec_rotation_${i}`);
    const error = (() => {
      try {
        new Webhooks({ secret: many });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).not.toContain('whsec_rotation');
  });
});

describe('describeType names every type in words', () => {
  it.each([
    [undefined, 'undefined'],
    [null, 'null'],
    [{}, 'an object'],
    [Object.create(null), 'an object'],
    [new Map(), 'an object'],
    [[], 'an array'],
    [() => {}, 'a function'],
    [true, 'a boolean'],
    [10n, 'a bigint'],
    [Symbol('s'), 'a symbol'],
  ])('%s', (value, words) => {
    expect(describeType(value)).toBe(words);
  });
});

describe('the default log line and unsigned header values', () => {
  it('caps a long delivery id and escapes control characters, so one request cannot flood or forge a log line', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const webhooks = new Webhooks({ secret: SECRET });
      webhooks.on('image.created', () => {
        throw new Error('handler failed');
      });
      const long = `dlv_${'a'.repeat(20_000)}`;
      await webhooks.handle(
        createSignedRequest(createTestEvent('image.created'), { secret: SECRET, deliveryId: long }),
      );
      const line = String(spy.mock.calls[0]?.[0]);
      expect(line.length).toBeLessThan(600);
      expect(line).toContain(`delivery dlv_${'a'.repeat(60)}`);
      expect(line).toMatch(/… \(\d+ more characters\)/);

      // Cut between the halves of a surrogate pair: the half is dropped, not printed alone.
      const emoji = `${'b'.repeat(127)}\u{1F600}${'c'.repeat(10)}`;
      await webhooks.handle(
        createSignedRequest(createTestEvent('image.created'), { secret: SECRET, deliveryId: emoji }),
      );
      expect(String(spy.mock.calls[1]?.[0])).toContain(`delivery ${'b'.repeat(127)}… (12 more characters)`);

      const forged = 'dlv_1\u001b[2J\u0007\nFAKE: all good\u202e';
      await webhooks.handle(
        createSignedRequest(createTestEvent('image.created'), { secret: SECRET, deliveryId: forged }),
      );
      const second = String(spy.mock.calls[2]?.[0]);
      expect(second).toContain('delivery dlv_1\\x1b[2J\\x07\\nFAKE: all good\\u202e');
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is that none reach the log.
      expect(second).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
    } finally {
      spy.mockRestore();
    }
  });
});
