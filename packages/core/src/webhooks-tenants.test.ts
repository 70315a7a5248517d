/**
 * A secret per tenant (`secret` as a function of the tenant) through `handle()`, `verifyAsync()`,
 * `process()` and `replay()`: which secret verifies, what an unknown tenant is answered (exactly a
 * wrong signature), what a failing lookup is answered (503), the cache of the lookup's answers, and
 * the keys scoped by tenant (idempotency, the archive, replays). Node's crypto and Web Crypto alike.
 */
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type BegunEvent,
  deliveryKey,
  type ErrorContext,
  eventKey,
  type HandlerContext,
  MAX_TENANT_CHARACTERS,
  MemoryArchive,
  type QueuedDelivery,
  type QueuedRun,
  type SecretLookup,
  type WebhookEvent,
  type WebhookQueue,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { setWebCryptoOnly } from './protocol/crypto.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRETS: Readonly<Record<string, string>> = {
  acme: 'whsec_tenant_acme_71c2',
  globex: 'whsec_tenant_globex_0b9d',
};

/** True while a test runs on Web Crypto only (signing, on node:crypto, steps out of it). */
let webOnly = false;

afterEach(() => {
  webOnly = false;
  setWebCryptoOnly(false);
});

/** `createSignedRequest`, on node:crypto even while verification runs on Web Crypto only. */
function signed(event: AnyTestEvent, options: Parameters<typeof createSignedRequest>[1]) {
  setWebCryptoOnly(false);
  try {
    return createSignedRequest(event, options);
  } finally {
    setWebCryptoOnly(webOnly);
  }
}

type AnyTestEvent = WebhookEvent<string, object>;

/** A lookup over `SECRETS` that counts its calls per tenant. */
function countingLookup(answer: (tenant: string) => ReturnType<SecretLookup> = (tenant) => SECRETS[tenant]) {
  const calls: string[] = [];
  const lookup: SecretLookup = (tenant) => {
    calls.push(tenant);
    return answer(tenant);
  };
  return { calls, lookup };
}

interface Heard {
  error: WebhookVerificationError;
  context: ErrorContext;
}

function setup(lookup: SecretLookup, options: Omit<WebhooksOptions, 'secret'> = {}) {
  const webhooks = new Webhooks({ ...options, secret: lookup });
  const heard: Heard[] = [];
  webhooks.onError((error, context) => void heard.push({ error, context }));
  return { webhooks, heard };
}

function post(
  webhooks: Webhooks,
  tenant: string | undefined,
  options: { secret?: string; event?: AnyTestEvent; signature?: string | undefined; timestamp?: number } = {},
) {
  const secret = options.secret ?? SECRETS[tenant ?? ''] ?? 'whsec_nobody_knows_this';
  const event = options.event ?? createTestEvent('image.created');
  const { headers, body } = signed(event, {
    secret,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
  });
  const sent: Record<string, string | undefined> = { ...headers };
  if ('signature' in options) sent['x-service-signature'] = options.signature;
  return webhooks.handle({ method: 'POST', headers: sent, body, tenant, request: { tenant } });
}

function codeOf(body: string): string {
  return (JSON.parse(body) as { error: { code: string } }).error.code;
}

/** Waits for `check` to hold, polling; fails after a generous ceiling. */
async function until(check: () => boolean | Promise<boolean>, ceilingMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ceilingMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise with its resolve and reject, for a lookup held open by the test. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

for (const crypto of ['node:crypto', 'Web Crypto'] as const) {
  describe(`a secret per tenant (${crypto})`, () => {
    const web = crypto === 'Web Crypto';
    const start = () => {
      webOnly = web;
      setWebCryptoOnly(web);
    };

    it("verifies with the tenant's secret and tells handlers the tenant and the secret", async () => {
      start();
      const { lookup } = countingLookup((tenant) =>
        tenant === 'acme' ? [{ secret: SECRETS.acme as string, label: 'acme-2026' }] : SECRETS[tenant],
      );
      const { webhooks, heard } = setup(lookup);
      const seen: HandlerContext[] = [];
      webhooks.on('image.created', (_event, context) => void seen.push(context));
      const acme = await post(webhooks, 'acme');
      expect(acme.status).toBe(200);
      const globex = await post(webhooks, 'globex');
      expect(globex.status).toBe(200);
      expect(seen.map(({ tenant, secret }) => ({ tenant, secret }))).toEqual([
        { tenant: 'acme', secret: { index: 0, label: 'acme-2026' } },
        { tenant: 'globex', secret: { index: 0 } },
      ]);
      expect(heard).toEqual([]);
    });

    it("refuses another tenant's secret as SIGNATURE_MISMATCH", async () => {
      start();
      const { webhooks, heard } = setup(countingLookup().lookup);
      let ran = 0;
      webhooks.onAny(() => void ran++);
      const answer = await post(webhooks, 'acme', { secret: SECRETS.globex });
      expect(answer.status).toBe(400);
      expect(codeOf(answer.body)).toBe('SIGNATURE_MISMATCH');
      expect(ran).toBe(0);
      expect(heard.map(({ error }) => error.code)).toEqual(['SIGNATURE_MISMATCH']);
      expect(heard[0]?.context.tenant).toBe('acme');
    });

    it('answers an unknown tenant exactly as a wrong signature, and says why to onError only', async () => {
      start();
      const { lookup, calls } = countingLookup((tenant) =>
        tenant === 'nobody' ? undefined : tenant === 'gone' ? null : tenant === 'empty' ? [] : SECRETS[tenant],
      );
      const { webhooks, heard } = setup(lookup);
      const wrong = await post(webhooks, 'acme', { secret: 'whsec_wrong_one' });
      expect(wrong.status).toBe(400);
      const long = 'x'.repeat(MAX_TENANT_CHARACTERS + 1);
      const refusals = [
        await post(webhooks, 'nobody', { secret: SECRETS.acme }),
        await post(webhooks, 'gone', { secret: SECRETS.acme }),
        await post(webhooks, 'empty', { secret: SECRETS.acme }),
        await post(webhooks, undefined, { secret: SECRETS.acme }),
        await post(webhooks, '', { secret: SECRETS.acme }),
        // A repeated header, as an adapter's tenant option might pass it: not a tenant.
        await post(webhooks, ['acme', 'acme'] as never, { secret: SECRETS.acme }),
        await post(webhooks, long, { secret: SECRETS.acme }),
      ];
      for (const answer of refusals) expect(answer).toEqual(wrong);
      // The longest tenant still looked up: exactly MAX_TENANT_CHARACTERS.
      const longest = 'y'.repeat(MAX_TENANT_CHARACTERS);
      expect((await post(webhooks, longest, { secret: SECRETS.acme })).status).toBe(400);
      expect(calls).toEqual(['acme', 'nobody', 'gone', 'empty', longest]);
      const causes = heard.map(({ error }) => {
        expect(error.code).toBe('SIGNATURE_MISMATCH');
        return (error.cause as Error | undefined)?.message;
      });
      expect(causes[0]).toBeUndefined();
      expect(causes.slice(1, 4)).toEqual(Array(3).fill('pixhook: the secret lookup found no secret for this tenant.'));
      expect(causes[4]).toMatch(/^pixhook: no tenant came with this request/);
      expect(causes[5]).toMatch(/^pixhook: no tenant came with this request/);
      expect(causes[6]).toMatch(/^pixhook: no tenant came with this request/);
      expect(causes[7]).toBe(`pixhook: the tenant is longer than ${MAX_TENANT_CHARACTERS} characters.`);
      expect(heard.map(({ context }) => context.tenant)).toEqual([
        'acme',
        'nobody',
        'gone',
        'empty',
        undefined,
        undefined,
        undefined,
        long,
        longest,
      ]);
    });

    it('refuses a bad signature header or timestamp before looking the tenant up', async () => {
      start();
      const { lookup, calls } = countingLookup();
      const { webhooks, heard } = setup(lookup);
      const missing = await post(webhooks, 'acme', { signature: undefined });
      const malformed = await post(webhooks, 'acme', { signature: 'v1=abc' });
      const old = await post(webhooks, 'acme', { timestamp: Math.floor(Date.now() / 1000) - 3600 });
      const noTenant = await post(webhooks, undefined, { timestamp: Math.floor(Date.now() / 1000) - 3600 });
      expect([missing, malformed, old, noTenant].map((answer) => [answer.status, codeOf(answer.body)])).toEqual([
        [400, 'MISSING_SIGNATURE'],
        [400, 'MALFORMED_SIGNATURE'],
        [400, 'TIMESTAMP_OUT_OF_TOLERANCE'],
        [400, 'TIMESTAMP_OUT_OF_TOLERANCE'],
      ]);
      expect(calls).toEqual([]);
      expect(heard.map(({ context }) => context.tenant)).toEqual(['acme', 'acme', 'acme', undefined]);
    });

    it('answers 503 SECRET_UNAVAILABLE when the lookup fails or answers no secrets, and does not cache it', async () => {
      start();
      const answers: Record<string, () => ReturnType<SecretLookup>> = {
        throws: () => {
          throw new Error('database down');
        },
        rejects: () => Promise.reject(new Error('database timed out')),
        empty: () => '',
        four: () => ['whsec_a', 'whsec_b', 'whsec_c', 'whsec_d'],
        odd: () => ({ secret: 'whsec_odd', colour: 'blue' }) as never,
        asyncEmpty: () => Promise.resolve(['']),
      };
      const { lookup, calls } = countingLookup((tenant) => (answers[tenant] as () => ReturnType<SecretLookup>)());
      const { webhooks, heard } = setup(lookup);
      let ran = 0;
      webhooks.onAny(() => void ran++);
      for (const tenant of Object.keys(answers)) {
        for (let i = 0; i < 2; i++) {
          const answer = await post(webhooks, tenant, { secret: 'whsec_odd' });
          expect(answer.status).toBe(503);
          expect(codeOf(answer.body)).toBe('SECRET_UNAVAILABLE');
          expect(answer.body).not.toContain('whsec_');
        }
      }
      expect(ran).toBe(0);
      // Never cached: each delivery asked again.
      expect(calls).toEqual(Object.keys(answers).flatMap((tenant) => [tenant, tenant]));
      expect(heard.map(({ error }) => error.code)).toEqual(Array(12).fill('SECRET_UNAVAILABLE'));
      const causes = heard.filter((_, i) => i % 2 === 0).map(({ error }) => (error.cause as Error).message);
      expect(causes[0]).toBe('database down');
      expect(causes[1]).toBe('database timed out');
      expect(causes[2]).toMatch(/^pixhook: the secret lookup's answer is empty/);
      expect(causes[3]).toMatch(/^pixhook: the secret lookup's answer has 4 entries/);
      expect(causes[4]).toMatch(/unknown field "colour"/);
      expect(causes[5]).toMatch(/^pixhook: the secret lookup's answer\[0\] is empty/);
      for (const { error, context } of heard) {
        expect(JSON.stringify(error.cause, Object.getOwnPropertyNames(error.cause))).not.toMatch(/whsec_[a-d]\b/);
        expect(context.tenant).toBeDefined();
      }
    });

    it("caches found and not-found answers: one lookup per tenant, the secret's changes seen after forgetSecrets()", async () => {
      start();
      const current: Record<string, string | undefined> = { ...SECRETS };
      const { lookup, calls } = countingLookup((tenant) => current[tenant]);
      const { webhooks } = setup(lookup);
      webhooks.onAny(() => {});
      for (let i = 0; i < 3; i++) {
        expect((await post(webhooks, 'acme')).status).toBe(200);
        expect((await post(webhooks, 'nobody', { secret: SECRETS.acme })).status).toBe(400);
      }
      expect(calls).toEqual(['acme', 'nobody']);
      // The app rotates acme's secret: the cached one still verifies until forgotten.
      current.acme = 'whsec_tenant_acme_rotated';
      expect((await post(webhooks, 'acme')).status).toBe(200);
      webhooks.forgetSecrets('acme');
      expect((await post(webhooks, 'acme')).status).toBe(400);
      expect((await post(webhooks, 'acme', { secret: 'whsec_tenant_acme_rotated' })).status).toBe(200);
      expect(calls).toEqual(['acme', 'nobody', 'acme']);
      // nobody was not forgotten; forgetSecrets() forgets every tenant.
      current.nobody = 'whsec_nobody_now';
      expect((await post(webhooks, 'nobody', { secret: 'whsec_nobody_now' })).status).toBe(400);
      webhooks.forgetSecrets();
      expect((await post(webhooks, 'nobody', { secret: 'whsec_nobody_now' })).status).toBe(200);
      expect((await post(webhooks, 'acme', { secret: 'whsec_tenant_acme_rotated' })).status).toBe(200);
      expect(calls).toEqual(['acme', 'nobody', 'acme', 'nobody', 'acme']);
    });

    it('keeps answers ttlMs, at most max tenants, and none with secretCache: false', async () => {
      start();
      const ttl = countingLookup();
      const { webhooks: short } = setup(ttl.lookup, { secretCache: { ttlMs: 1_000 } });
      expect((await post(short, 'acme')).status).toBe(200);
      expect((await post(short, 'acme')).status).toBe(200);
      expect(ttl.calls).toEqual(['acme']);
      // Past ttlMs (long enough that two deliveries in a row fall within it on a busy machine) the next delivery asks again.
      await until(async () => {
        expect((await post(short, 'acme')).status).toBe(200);
        return ttl.calls.length === 2;
      });

      const lru = countingLookup();
      const { webhooks: small } = setup(lru.lookup, { secretCache: { max: 1 } });
      await post(small, 'acme');
      await post(small, 'acme');
      await post(small, 'globex');
      await post(small, 'globex');
      await post(small, 'acme');
      expect(lru.calls).toEqual(['acme', 'globex', 'acme']);

      const none = countingLookup();
      const { webhooks: uncached } = setup(none.lookup, { secretCache: false });
      for (let i = 0; i < 3; i++) expect((await post(uncached, 'acme')).status).toBe(200);
      expect((await post(uncached, 'nobody', { secret: SECRETS.acme })).status).toBe(400);
      expect(none.calls).toEqual(['acme', 'acme', 'acme', 'nobody']);
      uncached.forgetSecrets('acme');
      uncached.forgetSecrets();
    });

    it('shares one lookup between concurrent deliveries of one tenant', async () => {
      start();
      const held = deferred<string>();
      const { lookup, calls } = countingLookup(() => held.promise);
      const { webhooks } = setup(lookup);
      const answers = [post(webhooks, 'acme'), post(webhooks, 'acme'), post(webhooks, 'acme')];
      await until(() => calls.length === 1);
      held.resolve(SECRETS.acme as string);
      expect((await Promise.all(answers)).map((answer) => answer.status)).toEqual([200, 200, 200]);
      expect((await post(webhooks, 'acme')).status).toBe(200);
      expect(calls).toEqual(['acme']);
    });

    it('does not cache a lookup that was under way when the secrets were forgotten', async () => {
      start();
      const lookups: ReturnType<typeof deferred<string>>[] = [];
      const { lookup, calls } = countingLookup(() => {
        const one = deferred<string>();
        lookups.push(one);
        return one.promise;
      });
      const { webhooks } = setup(lookup);
      const first = post(webhooks, 'acme');
      await until(() => lookups.length === 1);
      // The secret changes in the app's database while the first lookup is under way.
      webhooks.forgetSecrets('acme');
      const second = post(webhooks, 'acme', { secret: 'whsec_acme_new' });
      await until(() => lookups.length === 2);
      lookups[0]?.resolve(SECRETS.acme as string);
      expect((await first).status).toBe(200);
      // A third delivery while the second lookup is still under way shares it.
      const third = post(webhooks, 'acme', { secret: 'whsec_acme_new' });
      // (handle() calls the lookup before it returns: no wait is needed to see a call.)
      expect(calls).toEqual(['acme', 'acme']);
      lookups[1]?.resolve('whsec_acme_new');
      expect((await second).status).toBe(200);
      expect((await third).status).toBe(200);
      // The old answer was not cached: the new one was.
      expect((await post(webhooks, 'acme', { secret: 'whsec_acme_new' })).status).toBe(200);
      expect((await post(webhooks, 'acme')).status).toBe(400);
      expect(calls).toEqual(['acme', 'acme']);

      // forgetSecrets() of every tenant does the same.
      const fourth = post(webhooks, 'globex');
      webhooks.forgetSecrets();
      await until(() => lookups.length === 3);
      lookups[2]?.resolve(SECRETS.globex as string);
      expect((await fourth).status).toBe(200);
      const fifth = post(webhooks, 'globex');
      await until(() => lookups.length === 4);
      lookups[3]?.resolve(SECRETS.globex as string);
      expect((await fifth).status).toBe(200);
    });

    it('answers 503 SECRET_UNAVAILABLE when the lookup has not answered within deliveryTimeoutMs, and asks again next time', async () => {
      start();
      const lookups: ReturnType<typeof deferred<string>>[] = [];
      const { lookup, calls } = countingLookup(() => {
        const one = deferred<string>();
        lookups.push(one);
        return one.promise;
      });
      const { webhooks, heard } = setup(lookup, { deliveryTimeoutMs: 100 });
      webhooks.on('image.created', () => {});
      // Two deliveries share the lookup that never answers: both are answered.
      const [first, joined] = await Promise.all([post(webhooks, 'acme'), post(webhooks, 'acme')]);
      for (const answer of [first, joined]) {
        expect(answer.status).toBe(503);
        expect(codeOf(answer.body)).toBe('SECRET_UNAVAILABLE');
      }
      expect((heard[0]?.error.cause as Error | undefined)?.message).toBe(
        'pixhook: the secret lookup did not answer within 100 ms (deliveryTimeoutMs).',
      );
      // Not kept as the tenant's lookup under way: the next delivery asks again.
      const second = post(webhooks, 'acme');
      expect(calls).toEqual(['acme', 'acme']);
      lookups[1]?.resolve(SECRETS.acme as string);
      expect((await second).status).toBe(200);
      // The first lookup's late answer changes nothing.
      lookups[0]?.resolve('whsec_late_answer');
      expect((await post(webhooks, 'acme')).status).toBe(200);
      expect(calls).toEqual(['acme', 'acme']);
    });

    it('answers a synchronous lookup from the same turn and an async one alike, with or without a deadline', async () => {
      start();
      const sync = countingLookup();
      const asynchronous = countingLookup(async (tenant) => SECRETS[tenant]);
      for (const [{ lookup }, deliveryTimeoutMs] of [
        [sync, undefined],
        [asynchronous, undefined],
        [asynchronous, false],
      ] as const) {
        const { webhooks } = setup(lookup, { deliveryTimeoutMs });
        webhooks.on('image.created', () => {});
        expect((await post(webhooks, 'acme')).status).toBe(200);
        expect((await post(webhooks, 'globex', { secret: SECRETS.acme })).status).toBe(400);
      }
      expect(sync.calls).toEqual(['acme', 'globex']);
      expect(asynchronous.calls).toEqual(['acme', 'globex', 'acme', 'globex']);
    });

    it('runs the same event id once per tenant, and a redelivery to one tenant is a duplicate', async () => {
      start();
      const { webhooks } = setup(countingLookup().lookup);
      const ran: string[] = [];
      webhooks.on('image.created', (event, context) => void ran.push(`${context.tenant}:${event.id}`));
      const event = createTestEvent('image.created', undefined, { id: 'evt_shared_1' });
      expect((await post(webhooks, 'acme', { event })).body).toBe('{"received":true}');
      expect((await post(webhooks, 'globex', { event })).body).toBe('{"received":true}');
      const again = await post(webhooks, 'acme', { event });
      expect(again.status).toBe(200);
      expect(again.body).not.toBe('{"received":true}');
      expect(ran).toEqual(['acme:evt_shared_1', 'globex:evt_shared_1']);
    });

    it('tells onError the tenant and the secret of a verified delivery whose handler failed', async () => {
      start();
      const { webhooks, heard } = setup(() => [
        { secret: 'whsec_acme_old', label: 'old' },
        { secret: SECRETS.acme as string, label: 'new' },
      ]);
      webhooks.on('image.created', () => {
        throw new Error('handler broke');
      });
      expect((await post(webhooks, 'acme')).status).toBe(500);
      expect(heard.map(({ error }) => error.code)).toEqual(['HANDLER_FAILED']);
      expect(heard[0]?.context).toMatchObject({ tenant: 'acme', secret: { index: 1, label: 'new' } });
    });

    it('verifyAsync() checks against the given tenant; verify() refuses with a TypeError naming verifyAsync', async () => {
      start();
      const { webhooks } = setup(countingLookup().lookup);
      const event = createTestEvent('image.created');
      const { headers, body } = signed(event, { secret: SECRETS.acme as string });
      expect(await webhooks.verifyAsync(body, headers, { tenant: 'acme' })).toEqual(event);
      await expect(webhooks.verifyAsync(body, headers, { tenant: 'globex' })).rejects.toMatchObject({
        code: 'SIGNATURE_MISMATCH',
      });
      await expect(webhooks.verifyAsync(body, headers)).rejects.toMatchObject({
        code: 'SIGNATURE_MISMATCH',
        cause: expect.objectContaining({ message: expect.stringMatching(/no tenant/) }),
      });
      expect(() => webhooks.verify(body, headers)).toThrow(TypeError);
      expect(() => webhooks.verify(body, headers)).toThrow(/verifyAsync\(rawBody, headers, \{ tenant \}\)/);
    });
  });
}

describe('a secret per tenant: entries', () => {
  it("ends a tenant's secret at its notAfter, on the now clock, while its cached answer is kept", async () => {
    const end = Date.parse('2026-12-01T00:00:00Z');
    let now = end - 1000;
    const { lookup, calls } = countingLookup(() => [
      { secret: 'whsec_acme_next', label: 'next' },
      { secret: SECRETS.acme as string, label: 'current', notAfter: end },
    ]);
    const webhooks = new Webhooks({ secret: lookup, now: () => now, tolerance: false });
    const seen: unknown[] = [];
    webhooks.on('image.created', (_event, context) => void seen.push(context.secret));
    expect((await post(webhooks, 'acme')).status).toBe(200);
    now = end;
    const expired = await post(webhooks, 'acme');
    expect(expired.status).toBe(400);
    expect(expired.body).toContain('The signature matches secret \\"current\\", whose notAfter');
    expect((await post(webhooks, 'acme', { secret: 'whsec_acme_next' })).status).toBe(200);
    expect(seen).toEqual([
      { index: 1, label: 'current' },
      { index: 0, label: 'next' },
    ]);
    expect(calls).toEqual(['acme']);
  });
});

describe('a secret per tenant: the cache under a flood of made-up tenants', () => {
  it('keeps tenants without a secret apart: they never evict a real tenant', async () => {
    const { calls, lookup } = countingLookup();
    const { webhooks } = setup(lookup, { secretCache: { max: 2 } });
    expect((await post(webhooks, 'acme')).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await post(webhooks, `made-up-${i}`)).status).toBe(400);
    expect((await post(webhooks, 'acme')).status).toBe(200);
    expect(calls.filter((tenant) => tenant === 'acme')).toEqual(['acme']);
    // Not-found answers are cached too, within their own bound.
    expect((await post(webhooks, 'made-up-19')).status).toBe(400);
    expect(calls.filter((tenant) => tenant === 'made-up-19')).toHaveLength(1);
    webhooks.forgetSecrets('made-up-19');
    await post(webhooks, 'made-up-19');
    expect(calls.filter((tenant) => tenant === 'made-up-19')).toHaveLength(2);
  });
});

describe('a secret per tenant: options', () => {
  it('refuses secretCache without a secret function, and bad cache options', () => {
    expect(() => new Webhooks({ secret: 'whsec_plain', secretCache: { max: 5 } })).toThrow(
      /^pixhook: secretCache caches the answers of a secret function/,
    );
    expect(() => new Webhooks({ secret: 'whsec_plain', secretCache: false })).toThrow(TypeError);
    const lookup = () => undefined;
    for (const secretCache of [5, null, 'big']) {
      expect(() => new Webhooks({ secret: lookup, secretCache: secretCache as never })).toThrow(
        /^pixhook: secretCache must be \{ max, ttlMs \} or false/,
      );
    }
    expect(() => new Webhooks({ secret: lookup, secretCache: { size: 4 } as never })).toThrow(
      'pixhook: secretCache has an unknown option "size"; it takes max and ttlMs.',
    );
    for (const bad of [0, -1, 1.5, Number.NaN, '10']) {
      expect(() => new Webhooks({ secret: lookup, secretCache: { max: bad as never } })).toThrow(
        /^pixhook: secretCache\.max must be a positive whole number/,
      );
      expect(() => new Webhooks({ secret: lookup, secretCache: { ttlMs: bad as never } })).toThrow(
        /^pixhook: secretCache\.ttlMs must be a positive whole number/,
      );
    }
    expect(() => new Webhooks({ secret: lookup, secretCache: {} })).not.toThrow();
  });

  it('shows "per tenant" and no secret when inspected, and ignores the tenant without a lookup', async () => {
    const webhooks = new Webhooks({ secret: () => 'whsec_never_shown_5a' });
    expect(inspect(webhooks)).toContain('secrets: per tenant (hidden)');
    expect(inspect(webhooks, { showHidden: true, depth: 5 })).not.toContain('whsec_');
    // Without a lookup, a tenant changes nothing: no key scoping, no context.tenant.
    const plain = new Webhooks({ secret: SECRETS.acme as string });
    const seen: (string | undefined)[] = [];
    plain.on('image.created', (_event, context) => void seen.push(context.tenant));
    const event = createTestEvent('image.created');
    const first = createSignedRequest(event, { secret: SECRETS.acme as string });
    expect((await plain.handle({ method: 'POST', ...first, tenant: 'acme' })).body).toBe('{"received":true}');
    const second = createSignedRequest(event, { secret: SECRETS.acme as string });
    expect((await plain.handle({ method: 'POST', ...second, tenant: 'globex' })).body).not.toBe('{"received":true}');
    expect(seen).toEqual([undefined]);
    plain.forgetSecrets('acme');
    const third = createSignedRequest(event, { secret: SECRETS.acme as string });
    expect(await plain.verifyAsync(third.body, third.headers, { tenant: 'globex' })).toEqual(event);
  });
});

describe('keys scoped by tenant', () => {
  it('eventKey and deliveryKey', () => {
    expect(eventKey('evt_1')).toBe('evt_1');
    expect(eventKey('evt_1', 'acme')).toBe('acme/evt_1');
    expect(eventKey('evt_1', 'a/b c')).toBe('a%2Fb%20c/evt_1');
    expect(eventKey('evt_1', '')).toBe('/evt_1');
    const event = createTestEvent('image.created', undefined, { id: 'evt_2' });
    expect(deliveryKey({ event })).toBe('evt_2');
    expect(deliveryKey({ event, tenant: 'acme' })).toBe('acme/evt_2');
  });

  it('archives under the key, and replays <tenant>/<event id> with context.tenant', async () => {
    const archive = new MemoryArchive();
    const tenant = 'a/cme';
    const webhooks = new Webhooks({ secret: (t) => (t === tenant ? SECRETS.acme : SECRETS[t]), archive });
    const runs: { tenant: string | undefined; replay: boolean | undefined; secret: unknown }[] = [];
    webhooks.on('image.created', (_event, context) => {
      runs.push({ tenant: context.tenant, replay: context.replay, secret: context.secret });
    });
    const event = createTestEvent('image.created', undefined, { id: 'evt_replayed_1' });
    expect((await post(webhooks, tenant, { secret: SECRETS.acme, event })).status).toBe(200);
    expect((await post(webhooks, 'globex', { event })).status).toBe(200);
    const key = eventKey(event.id, tenant);
    expect(key).toBe('a%2Fcme/evt_replayed_1');
    expect((await archive.get(key))?.timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
      'delivery:processed',
    ]);
    expect(await archive.get(event.id)).toBeUndefined();
    expect(await archive.get('globex/evt_replayed_1')).toBeDefined();

    const result = await webhooks.replay(key);
    expect(result).toMatchObject({ eventId: key, outcome: 'processed' });
    expect(runs).toEqual([
      { tenant, replay: undefined, secret: { index: 0 } },
      { tenant: 'globex', replay: undefined, secret: { index: 0 } },
      { tenant, replay: true, secret: { index: 0 } },
    ]);
    expect((await archive.get(key))?.timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
      'delivery:processed',
      'replay:processed',
    ]);
    expect((await webhooks.replay('acme/evt_never')).outcome).toBe('not-found');
    // Keys that are not <tenant>/<event id>: no tenant, or one that is not URI-encoded.
    for (const odd of [event.id, '/evt_replayed_1', '%E0%A4%A/evt_replayed_1']) {
      expect(await webhooks.replay(odd)).toEqual({ eventId: odd, outcome: 'not-found' });
    }
    expect(runs).toHaveLength(3);
  });

  it('refuses to replay an archived body that holds another event than its key says', async () => {
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: (tenant) => SECRETS[tenant], archive });
    const heard: WebhookVerificationError[] = [];
    webhooks.onError((error) => void heard.push(error));
    let ran = 0;
    webhooks.on('image.created', () => void ran++);
    const event = createTestEvent('image.created', undefined, { id: 'evt_moved' });
    expect((await post(webhooks, 'acme', { event })).status).toBe(200);
    const kept = await archive.get('acme/evt_moved');
    // The body recorded under a key of another event, as a changed row would be.
    await archive.record({
      kind: 'delivery',
      eventId: 'acme/evt_other',
      eventType: 'image.created',
      created: undefined,
      deliveryId: 'dlv_1',
      timestamp: 1,
      at: Date.now(),
      body: kept?.body as Uint8Array,
      headers: {},
      secretIndex: 0,
      mode: 'inline',
      status: 200,
      result: 'processed',
      ms: 1,
      runs: [],
    });
    const result = await webhooks.replay('acme/evt_other');
    expect(result.outcome).toBe('failed');
    expect(heard.map((error) => error.code)).toEqual(['INVALID_EVENT']);
    expect(ran).toBe(1);
    expect((await webhooks.replay('acme/evt_moved')).outcome).toBe('processed');
    expect(ran).toBe(2);
  });

  it('queued: a replay of <tenant>/<event id> is a new job of that tenant', async () => {
    const written: QueuedDelivery[] = [];
    const queue: WebhookQueue = { enqueue: async (delivery) => void written.push(structuredClone(delivery)) };
    const archive = new MemoryArchive();
    const webhooks = new Webhooks({ secret: (tenant) => SECRETS[tenant], queue, archive });
    const event = createTestEvent('image.created', undefined, { id: 'evt_q_replay' });
    expect((await post(webhooks, 'acme', { event })).status).toBe(202);
    expect(await webhooks.replay('acme/evt_q_replay')).toEqual({ eventId: 'acme/evt_q_replay', outcome: 'queued' });
    expect(written).toHaveLength(2);
    expect(written[1]).toMatchObject({ tenant: 'acme', secret: { index: 0 }, replay: expect.any(String) });
    expect(deliveryKey(written[1] as QueuedDelivery)).toBe('acme/evt_q_replay');
    expect((await archive.get('acme/evt_q_replay'))?.timeline.map((entry) => `${entry.kind}:${entry.result}`)).toEqual([
      'delivery:queued',
      'replay:queued',
    ]);
  });

  it('opens the transaction of <tenant>/<event id>, in a request and in a queue worker', async () => {
    const begun: string[] = [];
    const transactions = {
      async begin(eventId: string): Promise<BegunEvent<string>> {
        begun.push(eventId);
        return { state: 'claimed', transaction: eventId, commit: async () => {}, rollback: async () => {} };
      },
    };
    const webhooks = new Webhooks({ secret: (tenant) => SECRETS[tenant], transactions });
    const seen: string[] = [];
    webhooks.on('image.created', (_event, context) => void seen.push(`${context.tenant}:${context.transaction}`));
    const event = createTestEvent('image.created', undefined, { id: 'evt_tx_1' });
    expect((await post(webhooks, 'acme', { event })).status).toBe(200);
    const run: QueuedRun = { engine: 'map', jobId: 'j', attempt: 1, maxAttempts: 3, queuedAt: 0 };
    await webhooks.process(
      { event: event as QueuedDelivery['event'], deliveryId: 'dlv_1', timestamp: 1, tenant: 'globex' },
      run,
    );
    expect(begun).toEqual(['acme/evt_tx_1', 'globex/evt_tx_1']);
    expect(seen).toEqual(['acme:acme/evt_tx_1', 'globex:globex/evt_tx_1']);
  });

  it('queues jobs with the tenant and the secret, and a worker tells handlers the tenant', async () => {
    const jobs = new Map<string, QueuedDelivery>();
    const queue: WebhookQueue = {
      enqueue(delivery) {
        const id = deliveryKey(delivery);
        if (!jobs.has(id)) jobs.set(id, structuredClone(delivery));
        return Promise.resolve();
      },
    };
    const webhooks = new Webhooks({
      secret: (tenant) => (tenant === 'acme' ? { secret: SECRETS.acme as string, label: 'acme-1' } : SECRETS[tenant]),
      queue,
    });
    const seen: { tenant: string | undefined; secret: unknown }[] = [];
    const heard: Heard[] = [];
    webhooks.onError((error, context) => void heard.push({ error, context }));
    webhooks.on('image.created', (_event, context) => {
      seen.push({ tenant: context.tenant, secret: context.secret });
      if (context.tenant === 'globex') throw new Error('globex handler broke');
    });
    const event = createTestEvent('image.created', undefined, { id: 'evt_queued_1' });
    expect((await post(webhooks, 'acme', { event })).status).toBe(202);
    expect((await post(webhooks, 'globex', { event })).status).toBe(202);
    expect([...jobs.keys()]).toEqual(['acme/evt_queued_1', 'globex/evt_queued_1']);
    expect(jobs.get('acme/evt_queued_1')).toMatchObject({ tenant: 'acme', secret: { index: 0, label: 'acme-1' } });
    const run: QueuedRun = { engine: 'map', jobId: 'acme/evt_queued_1', attempt: 1, maxAttempts: 3, queuedAt: 0 };
    await webhooks.process(jobs.get('acme/evt_queued_1') as QueuedDelivery, run);
    await expect(
      webhooks.process(jobs.get('globex/evt_queued_1') as QueuedDelivery, { ...run, jobId: 'globex/evt_queued_1' }),
    ).rejects.toThrow('globex handler broke');
    // A job whose stored tenant and secret are not what core wrote: ignored, not trusted.
    await webhooks.process(
      { ...(jobs.get('acme/evt_queued_1') as QueuedDelivery), tenant: 5, secret: { index: -1 } } as never,
      run,
    );
    await webhooks.process(
      { ...(jobs.get('acme/evt_queued_1') as QueuedDelivery), secret: { index: 2, label: 'x'.repeat(65) } },
      run,
    );
    expect(seen).toEqual([
      { tenant: 'acme', secret: { index: 0, label: 'acme-1' } },
      { tenant: 'globex', secret: { index: 0 } },
      { tenant: undefined, secret: undefined },
      { tenant: 'acme', secret: { index: 2 } },
    ]);
    expect(heard.map(({ error }) => error.code)).toEqual(['HANDLER_FAILED']);
    expect(heard[0]?.context).toMatchObject({ tenant: 'globex', secret: { index: 0 } });
  });
});
