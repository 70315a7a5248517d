/**
 * The behaviour every `IdempotencyStore` must have, as one suite that each implementation runs
 * (`MemoryStore` in packages/core/test/memory-store-suite.test.ts, `RedisStore` with every client in
 * packages/redis/test). Only the public interface is used, plus `Webhooks.handle()` on top of it.
 * Every call carries a claim token, one per claim attempt, as core passes them.
 */
import { type IdempotencyStore, Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { describe, expect, it } from 'vitest';

/** TTLs a test wants; a store may take more options, but must honour these. */
export interface StoreSuiteOptions {
  inFlightTtlMs?: number;
  completedTtlMs?: number;
}

/** Builds a fresh, empty store (sharing nothing with earlier calls). */
export type CreateStore = (options: StoreSuiteOptions) => IdempotencyStore | Promise<IdempotencyStore>;

const SECRET = 'whsec_store_suite_4f3e2d1c';
const SHORT_TTL_MS = 500;
/** Long enough past SHORT_TTL_MS that a loaded machine sees the claim lapsed. */
const PAST_SHORT_TTL_MS = SHORT_TTL_MS * 2.5;
/**
 * For the claims that must stay alive by renewal (every third of the TTL): a late renewal on a busy
 * machine (2 cores, load 10) has a whole second before the claim lapses, where 500 ms left 333 ms.
 */
const RENEWED_TTL_MS = 1_500;
const PAST_RENEWED_TTL_MS = RENEWED_TTL_MS * 2.5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newId = () => `evt_suite_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
/** A claim token as core makes them: unique across processes, ASCII, at most 64 characters. */
const newToken = () => `suite-${globalThis.crypto.randomUUID()}:1`;

/** The store's `extend`, which both stores under test implement (it is optional in the protocol). */
function extendOf(store: IdempotencyStore): (eventId: string, token: string) => Promise<boolean> {
  expect(typeof store.extend).toBe('function');
  return (eventId, token) => store.extend!(eventId, token);
}

/**
 * Runs the shared store behaviour table against `create`, inside `describeFn` (`describe` by default;
 * `describe.concurrent` runs the tests side by side, `describe.skip` skips them).
 */
export function describeStoreSuite(
  name: string,
  create: CreateStore,
  describeFn: (name: string, body: () => void) => void = describe,
): void {
  describeFn(`${name}: the IdempotencyStore behaviour table`, () => {
    it('claims an event seen for the first time', async () => {
      const store = await create({});
      expect(await store.claim(newId(), newToken())).toBe('claimed');
    });

    it('answers in-flight while a claim is held, and completed after complete(), every time', async () => {
      const store = await create({});
      const id = newId();
      const token = newToken();
      expect(await store.claim(id, token)).toBe('claimed');
      expect(await store.claim(id, newToken())).toBe('in-flight');
      expect(await store.claim(id, newToken())).toBe('in-flight');
      await store.complete(id, token);
      expect(await store.claim(id, newToken())).toBe('completed');
      expect(await store.claim(id, newToken())).toBe('completed');
    });

    it('lets the event be claimed again after release()', async () => {
      const store = await create({});
      const id = newId();
      const first = newToken();
      expect(await store.claim(id, first)).toBe('claimed');
      await store.release(id, first);
      const second = newToken();
      expect(await store.claim(id, second)).toBe('claimed');
      await store.complete(id, second);
      expect(await store.claim(id, newToken())).toBe('completed');
    });

    it('keeps events apart', async () => {
      const store = await create({});
      const [a, b, c] = [newId(), newId(), newId()];
      const [ta, tb, tc] = [newToken(), newToken(), newToken()];
      expect(await store.claim(a, ta)).toBe('claimed');
      await store.complete(a, ta);
      expect(await store.claim(b, tb)).toBe('claimed');
      expect(await store.claim(c, tc)).toBe('claimed');
      await store.release(c, tc);
      expect([
        await store.claim(a, newToken()),
        await store.claim(b, newToken()),
        await store.claim(c, newToken()),
      ]).toEqual(['completed', 'in-flight', 'claimed']);
    });

    it('grants exactly one of many concurrent claims of one event', async () => {
      const store = await create({});
      const id = newId();
      const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(id, newToken())));
      expect(results.filter((result) => result === 'claimed')).toHaveLength(1);
      expect(results.filter((result) => result === 'in-flight')).toHaveLength(49);
    });

    // TTLs long enough that a loaded machine does not see them lapse between two calls; the tests
    // that wait for one run concurrently to keep the suite short.
    it.concurrent('lets a claim that was never settled expire after inFlightTtlMs', async ({ expect }) => {
      const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
      const id = newId();
      expect(await store.claim(id, newToken())).toBe('claimed');
      expect(await store.claim(id, newToken())).toBe('in-flight');
      await sleep(PAST_SHORT_TTL_MS);
      expect(await store.claim(id, newToken())).toBe('claimed');
    });

    it.concurrent('forgets a completed event after completedTtlMs, not before', async ({ expect }) => {
      const store = await create({ completedTtlMs: SHORT_TTL_MS });
      const id = newId();
      const token = newToken();
      expect(await store.claim(id, token)).toBe('claimed');
      await store.complete(id, token);
      expect(await store.claim(id, newToken())).toBe('completed');
      await sleep(PAST_SHORT_TTL_MS);
      expect(await store.claim(id, newToken())).toBe('claimed');
    });

    it('marks an event completed by complete() even without a claim', async () => {
      const store = await create({});
      const id = newId();
      await store.complete(id, newToken());
      expect(await store.claim(id, newToken())).toBe('completed');
    });

    it('treats release() of an event it never claimed as harmless', async () => {
      const store = await create({});
      const id = newId();
      await expect(store.release(id, newToken())).resolves.toBeUndefined();
      expect(await store.claim(id, newToken())).toBe('claimed');
    });

    describe("claim tokens: complete, release and extend act only on the caller's own claim", () => {
      it('leaves a claim held by another token when release() comes with a token that does not hold it', async () => {
        const store = await create({});
        const id = newId();
        const holder = newToken();
        expect(await store.claim(id, holder)).toBe('claimed');
        await store.release(id, newToken());
        expect(await store.claim(id, newToken())).toBe('in-flight');
        await store.release(id, holder);
        expect(await store.claim(id, newToken())).toBe('claimed');
      });

      it.concurrent('leaves the newer claim when a release comes with the token of a claim that expired', async ({
        expect,
      }) => {
        const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
        const id = newId();
        const stale = newToken();
        expect(await store.claim(id, stale)).toBe('claimed');
        await sleep(PAST_SHORT_TTL_MS);
        const newer = newToken();
        expect(await store.claim(id, newer)).toBe('claimed');
        await store.release(id, stale);
        expect(await store.claim(id, newToken())).toBe('in-flight');
        // The newer claim is intact: its owner still completes it.
        await store.complete(id, newer);
        expect(await store.claim(id, newToken())).toBe('completed');
      });

      it.concurrent('rejects a complete() whose claim expired and was taken since, leaving the newer claim', async ({
        expect,
      }) => {
        const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
        const id = newId();
        const stale = newToken();
        expect(await store.claim(id, stale)).toBe('claimed');
        await sleep(PAST_SHORT_TTL_MS);
        const newer = newToken();
        expect(await store.claim(id, newer)).toBe('claimed');
        await expect(store.complete(id, stale)).rejects.toThrow(Error);
        expect(await store.claim(id, newToken())).toBe('in-flight');
        // Still the newer delivery's claim, not a completion: its release frees the event.
        await store.release(id, newer);
        expect(await store.claim(id, newToken())).toBe('claimed');
      });

      it('rejects a complete() while another token holds the claim, and records nothing', async () => {
        const store = await create({});
        const id = newId();
        const holder = newToken();
        expect(await store.claim(id, holder)).toBe('claimed');
        await expect(store.complete(id, newToken())).rejects.toThrow(Error);
        expect(await store.claim(id, newToken())).toBe('in-flight');
        await store.release(id, holder);
        expect(await store.claim(id, newToken())).toBe('claimed');
      });

      it.concurrent("records the completion when the caller's claim expired and nobody claimed the event since", async ({
        expect,
      }) => {
        const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
        const id = newId();
        const token = newToken();
        expect(await store.claim(id, token)).toBe('claimed');
        await sleep(PAST_SHORT_TTL_MS);
        await store.complete(id, token);
        expect(await store.claim(id, newToken())).toBe('completed');
      });

      it('treats a release() after complete() as a no-op, and a second complete() too', async () => {
        const store = await create({});
        const id = newId();
        const token = newToken();
        expect(await store.claim(id, token)).toBe('claimed');
        await store.complete(id, token);
        await expect(store.release(id, token)).resolves.toBeUndefined();
        expect(await store.claim(id, newToken())).toBe('completed');
        await expect(store.complete(id, token)).resolves.toBeUndefined();
        await expect(store.complete(id, newToken())).resolves.toBeUndefined();
        expect(await store.claim(id, newToken())).toBe('completed');
      });

      it.concurrent('keeps a claim renewed by extend() past inFlightTtlMs, and answers false to other tokens', async ({
        expect,
      }) => {
        const store = await create({ inFlightTtlMs: RENEWED_TTL_MS });
        expect(store.inFlightTtlMs).toBe(RENEWED_TTL_MS);
        const extend = extendOf(store);
        const id = newId();
        const token = newToken();
        expect(await store.claim(id, token)).toBe('claimed');
        // Renew at a third of the TTL, as core does, for well past the TTL.
        const started = Date.now();
        while (Date.now() - started < PAST_RENEWED_TTL_MS) {
          await sleep(RENEWED_TTL_MS / 3);
          expect(await extend(id, token)).toBe(true);
          expect(await store.claim(id, newToken())).toBe('in-flight');
        }
        expect(await extend(id, newToken())).toBe(false);
        expect(await extend(newId(), token)).toBe(false);

        // Once it lapses and another delivery claims the event, the old token cannot renew it. Wait
        // for the lapse itself (the next claim succeeding), not for a guessed time past the TTL.
        const newer = newToken();
        const lapsedBy = Date.now() + PAST_RENEWED_TTL_MS * 4;
        let outcome = await store.claim(id, newer);
        while (outcome === 'in-flight' && Date.now() < lapsedBy) {
          await sleep(50);
          outcome = await store.claim(id, newer);
        }
        expect(outcome).toBe('claimed');
        expect(await extend(id, token)).toBe(false);
        expect(await extend(id, newer)).toBe(true);
        await store.complete(id, newer);
        expect(await extend(id, newer)).toBe(false);
        expect(await store.claim(id, newToken())).toBe('completed');
      });
    });

    describe('under Webhooks.handle()', () => {
      const deliver = (webhooks: Webhooks, event: ReturnType<typeof createTestEvent>) => {
        const { body, headers } = createSignedRequest(event, { secret: SECRET });
        return webhooks.handle({ method: 'POST', headers, body });
      };

      it('runs the handler once per event; a redelivery answers 200 without running it', async () => {
        const runs: string[] = [];
        const webhooks = new Webhooks({ secret: SECRET, store: await create({}) });
        webhooks.on('image.created', (event) => {
          runs.push(event.id);
        });
        const event = createTestEvent('image.created', undefined, { id: newId() });
        expect((await deliver(webhooks, event)).status).toBe(200);
        const again = await deliver(webhooks, event);
        expect(again.status).toBe(200);
        expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });
        expect(runs).toEqual([event.id]);
      });

      it('runs the handler again on the retry after it failed', async () => {
        let attempts = 0;
        const webhooks = new Webhooks({ secret: SECRET, store: await create({}) });
        webhooks.onError(() => {});
        webhooks.on('image.created', () => {
          attempts += 1;
          if (attempts === 1) throw new Error('downstream timed out');
        });
        const event = createTestEvent('image.created', undefined, { id: newId() });
        expect((await deliver(webhooks, event)).status).toBe(500);
        expect((await deliver(webhooks, event)).status).toBe(200);
        expect((await deliver(webhooks, event)).status).toBe(200);
        expect(attempts).toBe(2);
      });

      it('answers 409 IN_FLIGHT to deliveries that arrive while the first one runs', async () => {
        let runs = 0;
        let finish: () => void = () => {};
        let started: () => void = () => {};
        const running = new Promise<void>((resolve) => {
          finish = resolve;
        });
        const handlerStarted = new Promise<void>((resolve) => {
          started = resolve;
        });
        const webhooks = new Webhooks({ secret: SECRET, store: await create({}) });
        webhooks.onError(() => {});
        webhooks.on('image.created', async () => {
          runs += 1;
          started();
          await running;
        });
        const event = createTestEvent('image.created', undefined, { id: newId() });
        const first = deliver(webhooks, event);
        await handlerStarted;
        const others = await Promise.all(Array.from({ length: 10 }, () => deliver(webhooks, event)));
        finish();
        expect((await first).status).toBe(200);
        expect(others.map((answer) => answer.status)).toEqual(Array(10).fill(409));
        expect(JSON.parse(others[0]!.body).error.code).toBe('IN_FLIGHT');
        expect(runs).toBe(1);
      });

      /** A promise and the function that resolves it. */
      const signal = () => {
        let fire: () => void = () => {};
        const fired = new Promise<void>((resolve) => {
          fire = resolve;
        });
        return { fire, fired };
      };

      it.concurrent("keeps a later delivery's claim when a run that outlived inFlightTtlMs fails (issue 14, item 3)", async ({
        expect,
      }) => {
        // Core renews claims while handlers run, through extend(): offered the store without it
        // (as a store written to the contract's three methods), run 1 outlives its claim.
        const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
        const unrenewable: IdempotencyStore = {
          claim: (id, token) => store.claim(id, token),
          complete: (id, token) => store.complete(id, token),
          release: (id, token) => store.release(id, token),
        };
        const webhooks = new Webhooks({ secret: SECRET, store: unrenewable, handlerTimeoutMs: false });
        const errors: string[] = [];
        webhooks.onError((error) => {
          errors.push(error.code);
        });
        const failRun1 = signal();
        const run2Started = signal();
        const finishRun2 = signal();
        let runs = 0;
        webhooks.on('image.created', async () => {
          runs += 1;
          if (runs === 1) {
            await failRun1.fired;
            throw new Error('run 1 failed late');
          }
          if (runs === 2) {
            run2Started.fire();
            await finishRun2.fired;
          }
        });
        const event = createTestEvent('image.created', undefined, { id: newId() });

        const delivery1 = deliver(webhooks, event);
        await sleep(PAST_SHORT_TTL_MS);
        // Run 1's claim has lapsed: delivery 2 claims the event and runs it.
        const delivery2 = deliver(webhooks, event);
        await run2Started.fired;
        failRun1.fire();
        expect((await delivery1).status).toBe(500);

        // Run 1's release must not have freed delivery 2's claim.
        const delivery3 = await deliver(webhooks, event);
        expect(delivery3.status).toBe(409);
        expect(JSON.parse(delivery3.body).error.code).toBe('IN_FLIGHT');

        finishRun2.fire();
        expect((await delivery2).status).toBe(200);
        const delivery4 = await deliver(webhooks, event);
        expect(delivery4.status).toBe(200);
        expect(JSON.parse(delivery4.body)).toEqual({ received: true, duplicate: true });
        // Runs 1 and 2 overlapped (run 1 outlived its claim, nothing could renew it); no third run.
        expect(runs).toBe(2);
        expect(errors).toEqual(['HANDLER_FAILED', 'IN_FLIGHT']);
      });

      it.concurrent('keeps the claim of a handler running past handlerTimeoutMs beyond inFlightTtlMs, then records it', async ({
        expect,
      }) => {
        const webhooks = new Webhooks({
          secret: SECRET,
          store: await create({ inFlightTtlMs: RENEWED_TTL_MS }),
          handlerTimeoutMs: 100,
        });
        const errors: string[] = [];
        webhooks.onError((error) => {
          errors.push(error.code);
        });
        const finish = signal();
        let runs = 0;
        webhooks.on('image.created', async () => {
          runs += 1;
          await finish.fired;
        });
        const event = createTestEvent('image.created', undefined, { id: newId() });
        const first = await deliver(webhooks, event);
        expect(first.status).toBe(503);
        expect(JSON.parse(first.body).error.code).toBe('HANDLER_TIMEOUT');
        // Well past inFlightTtlMs, the handler still runs: core renewed its claim.
        await sleep(PAST_RENEWED_TTL_MS);
        expect((await deliver(webhooks, event)).status).toBe(409);
        finish.fire();
        // The run ends and records its completion; the next delivery is a duplicate. Until the
        // completion is recorded, a delivery still finds the claim (409), as the service's retry would.
        let last = await deliver(webhooks, event);
        for (let tries = 0; last.status === 409 && tries < 200; tries += 1) {
          await sleep(50);
          last = await deliver(webhooks, event);
        }
        expect(last.status).toBe(200);
        expect(JSON.parse(last.body)).toEqual({ received: true, duplicate: true });
        expect(runs).toBe(1);
        // The timeout, then an IN_FLIGHT for each delivery that came while the claim was held.
        expect(errors.length).toBeGreaterThanOrEqual(2);
        expect(errors).toEqual(['HANDLER_TIMEOUT', ...Array(errors.length - 1).fill('IN_FLIGHT')]);
      });
    });
  });
}
