/**
 * Static secrets as entries (`{ secret, label, notAfter }`), through `handle()`: the label told to
 * handlers and onError, a rotation that ends on its own at `notAfter` (on the `now` option's
 * clock), and option errors that never show a secret.
 */
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ErrorContext,
  type HandlerContext,
  MAX_SECRETS,
  type SecretEntry,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { setWebCryptoOnly } from './protocol/crypto.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const NEW = 'whsec_entries_new_4f1a';
const OLD = 'whsec_entries_old_8c2e';
/** The instant the old secret stops verifying. */
const END = Date.parse('2026-12-01T00:00:00Z');

function setup(secret: WebhooksOptions['secret'], nowMs = END - 60_000) {
  let now = nowMs;
  const webhooks = new Webhooks({ secret, now: () => now });
  const seen: HandlerContext[] = [];
  const heard: { error: WebhookVerificationError; context: ErrorContext }[] = [];
  webhooks.on('image.created', (_event, context) => void seen.push(context));
  webhooks.onError((error, context) => void heard.push({ error, context }));
  const post = (key: string) => {
    const t = Math.floor(now / 1000);
    const event = createTestEvent('image.created', undefined, { created: t });
    const { headers, body } = createSignedRequest(event, { secret: key, timestamp: t });
    return webhooks.handle({ method: 'POST', headers, body });
  };
  const setNow = (ms: number) => {
    now = ms;
  };
  return { webhooks, seen, heard, post, setNow };
}

afterEach(() => {
  setWebCryptoOnly(false);
});

function messageOf(body: string): { code: string; message: string } {
  return (JSON.parse(body) as { error: { code: string; message: string } }).error;
}

describe('secret entries', () => {
  it('tells handlers and onError which secret matched, by index and label', async () => {
    const { seen, heard, post, webhooks } = setup([{ secret: NEW, label: '2026-11' }, OLD]);
    expect((await post(NEW)).status).toBe(200);
    expect((await post(OLD)).status).toBe(200);
    expect(seen.map((context) => context.secret)).toEqual([{ index: 0, label: '2026-11' }, { index: 1 }]);
    webhooks.on('image.created', () => {
      throw new Error('second handler broke');
    });
    expect((await post(NEW)).status).toBe(500);
    expect(heard.map(({ error }) => error.code)).toEqual(['HANDLER_FAILED']);
    expect(heard[0]?.context.secret).toEqual({ index: 0, label: '2026-11' });
    expect(heard[0]?.context.tenant).toBeUndefined();
  });

  it('verifies a single entry given alone, not in an array', async () => {
    const { seen, post } = setup({ secret: NEW, label: 'only' });
    expect((await post(NEW)).status).toBe(200);
    expect(seen[0]?.secret).toEqual({ index: 0, label: 'only' });
  });

  for (const [form, notAfter] of [
    ['a Date', new Date(END)],
    ['milliseconds', END],
    ['an ISO string', '2026-12-01T00:00:00Z'],
  ] as const) {
    it(`stops verifying a secret at its notAfter (${form}), and says so only to a holder of it`, async () => {
      const { post, setNow, seen, heard } = setup([
        { secret: NEW, label: 'new' },
        { secret: OLD, label: 'old', notAfter },
      ]);
      expect((await post(OLD)).status).toBe(200);
      setNow(END - 1);
      expect((await post(OLD)).status).toBe(200);
      expect(seen.map((context) => context.secret?.label)).toEqual(['old', 'old']);
      setNow(END);
      const expired = await post(OLD);
      expect(expired.status).toBe(400);
      const { code, message } = messageOf(expired.body);
      expect(code).toBe('SIGNATURE_MISMATCH');
      expect(message).toBe(
        'The signature matches secret "old", whose notAfter (2026-12-01T00:00:00.000Z) has passed: finish the rotation in the service\'s dashboard (sign with the new secret), or move notAfter later.',
      );
      expect(message).not.toContain(OLD);
      // The live secret still verifies; a wrong one gets the plain mismatch.
      expect((await post(NEW)).status).toBe(200);
      const wrong = await post('whsec_somebody_else');
      expect(messageOf(wrong.body).message).toMatch(/^No v1 signature matches/);
      expect(heard.map(({ error }) => error.code)).toEqual(['SIGNATURE_MISMATCH', 'SIGNATURE_MISMATCH']);
    });
  }

  it('names an expired secret without a label by its index, and a lone expired secret verifies nothing', async () => {
    const { post } = setup([NEW, { secret: OLD, notAfter: END }], END + 1);
    expect(messageOf((await post(OLD)).body).message).toMatch(/^The signature matches secret #1, whose notAfter/);
    const alone = setup({ secret: OLD, notAfter: END }, END);
    expect(messageOf((await alone.post(OLD)).body).message).toMatch(/^The signature matches secret #0/);
    expect((await alone.post(NEW)).status).toBe(400);
  });

  it('ends a secret at its notAfter on Web Crypto too', async () => {
    const { webhooks, seen } = setup([NEW, { secret: OLD, label: 'old', notAfter: END }], END);
    const t = Math.floor(END / 1000);
    const event = createTestEvent('image.created', undefined, { created: t });
    const old = createSignedRequest(event, { secret: OLD, timestamp: t });
    const fresh = createSignedRequest(event, { secret: NEW, timestamp: t });
    setWebCryptoOnly(true);
    const expired = await webhooks.handle({ method: 'POST', ...old });
    expect(messageOf(expired.body).message).toMatch(/^The signature matches secret "old", whose notAfter/);
    expect((await webhooks.handle({ method: 'POST', ...fresh })).status).toBe(200);
    expect(seen.map((context) => context.secret)).toEqual([{ index: 0 }]);
  });

  it('prefers a live secret when the signature header carries both', async () => {
    const { webhooks, seen, setNow } = setup([
      { secret: OLD, label: 'old', notAfter: END },
      { secret: NEW, label: 'new' },
    ]);
    setNow(END + 10);
    const t = Math.floor((END + 10) / 1000);
    const event = createTestEvent('image.created', undefined, { created: t });
    const old = createSignedRequest(event, { secret: OLD, timestamp: t });
    const fresh = createSignedRequest(event, { secret: NEW, timestamp: t });
    const both = `${old.headers['x-service-signature']},${fresh.headers['x-service-signature'].replace(/^t=\d+,/, '')}`;
    const answer = await webhooks.handle({
      method: 'POST',
      headers: { ...old.headers, 'x-service-signature': both },
      body: old.body,
    });
    expect(answer.status).toBe(200);
    expect(seen.map((context) => context.secret)).toEqual([{ index: 1, label: 'new' }]);
  });
});

describe('secret entries: options', () => {
  const refused = (secret: unknown) => {
    try {
      new Webhooks({ secret: secret as never });
    } catch (error) {
      return error as Error;
    }
    throw new Error('no error thrown');
  };

  it('refuses invalid entries with TypeErrors that never show the secret', () => {
    const cases: [unknown, RegExp][] = [
      [
        { secret: NEW, notAfter: 1_800_000_000 },
        /^pixhook: secret\.notAfter 1800000000 is in 1970 as milliseconds: it looks like seconds/,
      ],
      [{ secret: NEW, label: NEW }, /^pixhook: secret\.label is the secret itself/],
      [[OLD, { secret: NEW, label: NEW }], /^pixhook: secret\[1\]\.label is the secret itself/],
      [{ secret: NEW, label: 'x'.repeat(65) }, /^pixhook: secret\.label must be a non-empty string of at most 64/],
      [{ secret: NEW, label: '' }, /^pixhook: secret\.label must be a non-empty string/],
      [{ secret: NEW, label: 7 }, /^pixhook: secret\.label must be a non-empty string/],
      [
        { secret: NEW, lable: 'typo' },
        /^pixhook: secret has an unknown field "lable"; a secret entry has secret, label/,
      ],
      [{ secret: NEW, notAfter: 'next tuesday' }, /^pixhook: secret\.notAfter must be a Date, milliseconds/],
      [{ secret: NEW, notAfter: new Date(Number.NaN) }, /^pixhook: secret\.notAfter must be/],
      [{ secret: NEW, notAfter: Number.POSITIVE_INFINITY }, /^pixhook: secret\.notAfter must be/],
      [{ secret: NEW, notAfter: true }, /^pixhook: secret\.notAfter must be/],
      [{ secret: '' }, /^pixhook: secret\.secret is empty/],
      [{ secret: ` ${NEW}` }, /^pixhook: secret\.secret has leading or trailing white space/],
      [{ secret: undefined, label: 'unset' }, /^pixhook: secret\.secret is missing/],
      [{ label: 'no secret' }, /^pixhook: secret\.secret is missing/],
      [[NEW, { secret: 42 }], /^pixhook: secret\[1\]\.secret must be a string, got a number/],
      [[NEW, null], /^pixhook: secret\[1\] is missing/],
      [{ secret: [NEW] }, /^pixhook: secret\.secret must be a string, got an array\.$/],
      [[], /^pixhook: secret is an empty array/],
    ];
    for (const [secret, message] of cases) {
      const error = refused(secret);
      expect(error).toBeInstanceOf(TypeError);
      expect(error.message).toMatch(message);
      expect(error.message).not.toContain(NEW.slice(6));
      expect(error.message).not.toContain(OLD.slice(6));
    }
  });

  it(`accepts at most MAX_SECRETS (${MAX_SECRETS}) secrets, expired ones included`, () => {
    const three: SecretEntry[] = [{ secret: NEW }, { secret: OLD, notAfter: new Date(0) }, { secret: 'whsec_third' }];
    expect(() => new Webhooks({ secret: three })).not.toThrow();
    const error = refused([...three, 'whsec_fourth_secret']);
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toMatch(/^pixhook: secret has 4 entries; at most 3 are accepted/);
    expect(error.message).not.toContain('fourth');
  });

  it('never shows a secret or a label when inspected', () => {
    const webhooks = new Webhooks({ secret: [{ secret: NEW, label: 'rotation-2026' }, OLD] });
    const shown = inspect(webhooks, { showHidden: true, depth: 10 });
    expect(shown).toContain('secrets: 2 (hidden)');
    for (const hidden of [NEW, OLD, 'rotation-2026']) expect(shown).not.toContain(hidden);
    expect(inspect(new Webhooks({ secret: async () => NEW }))).toContain('secrets: per tenant (hidden)');
  });
});
