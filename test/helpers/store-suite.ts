/**
 * The behaviour every `IdempotencyStore` must have, as one suite that each implementation runs
 * (`MemoryStore` in test/memory-store-suite.test.ts, `RedisStore` with every client in
 * packages/redis/test). Only the public interface is used, plus `Webhooks.handle()` on top of it.
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newId = () => `evt_suite_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;

/** Runs the shared store behaviour table against `create`. */
export function describeStoreSuite(name: string, create: CreateStore, describeFn: typeof describe = describe): void {
  describeFn(`${name}: the IdempotencyStore behaviour table`, () => {
    it('claims an event seen for the first time', async () => {
      const store = await create({});
      expect(await store.claim(newId())).toBe('claimed');
    });

    it('answers in-flight while a claim is held, and completed after complete(), every time', async () => {
      const store = await create({});
      const id = newId();
      expect(await store.claim(id)).toBe('claimed');
      expect(await store.claim(id)).toBe('in-flight');
      expect(await store.claim(id)).toBe('in-flight');
      await store.complete(id);
      expect(await store.claim(id)).toBe('completed');
      expect(await store.claim(id)).toBe('completed');
    });

    it('lets the event be claimed again after release()', async () => {
      const store = await create({});
      const id = newId();
      expect(await store.claim(id)).toBe('claimed');
      await store.release(id);
      expect(await store.claim(id)).toBe('claimed');
      await store.complete(id);
      expect(await store.claim(id)).toBe('completed');
    });

    it('keeps events apart', async () => {
      const store = await create({});
      const [a, b, c] = [newId(), newId(), newId()];
      expect(await store.claim(a)).toBe('claimed');
      await store.complete(a);
      expect(await store.claim(b)).toBe('claimed');
      expect(await store.claim(c)).toBe('claimed');
      await store.release(c);
      expect([await store.claim(a), await store.claim(b), await store.claim(c)]).toEqual([
        'completed',
        'in-flight',
        'claimed',
      ]);
    });

    it('grants exactly one of many concurrent claims of one event', async () => {
      const store = await create({});
      const id = newId();
      const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(id)));
      expect(results.filter((result) => result === 'claimed')).toHaveLength(1);
      expect(results.filter((result) => result === 'in-flight')).toHaveLength(49);
    });

    // TTLs long enough that a loaded machine does not see them lapse between two calls; the two
    // tests wait concurrently to keep the suite short.
    it.concurrent('lets a claim that was never settled expire after inFlightTtlMs', async ({ expect }) => {
      const store = await create({ inFlightTtlMs: SHORT_TTL_MS });
      const id = newId();
      expect(await store.claim(id)).toBe('claimed');
      expect(await store.claim(id)).toBe('in-flight');
      await sleep(SHORT_TTL_MS * 2.5);
      expect(await store.claim(id)).toBe('claimed');
    });

    it.concurrent('forgets a completed event after completedTtlMs, not before', async ({ expect }) => {
      const store = await create({ completedTtlMs: SHORT_TTL_MS });
      const id = newId();
      expect(await store.claim(id)).toBe('claimed');
      await store.complete(id);
      expect(await store.claim(id)).toBe('completed');
      await sleep(SHORT_TTL_MS * 2.5);
      expect(await store.claim(id)).toBe('claimed');
    });

    it('marks an event completed by complete() even without a claim', async () => {
      const store = await create({});
      const id = newId();
      await store.complete(id);
      expect(await store.claim(id)).toBe('completed');
    });

    it('treats release() of an event it never claimed as harmless', async () => {
      const store = await create({});
      const id = newId();
      await expect(store.release(id)).resolves.toBeUndefined();
      expect(await store.claim(id)).toBe('claimed');
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
    });
  });
}
