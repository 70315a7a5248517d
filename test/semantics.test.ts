/**
 * The delivery semantics core adds on top of the contract's table, run against every adapter and
 * framework version: the ordering guard (a late retry of an older event is acknowledged and its
 * guarded handler skipped) and named handlers (each fails alone, a retry runs only the failed
 * ones). Core decides both; every adapter must pass its answers through unchanged. One app per
 * adapter and block, created once; each test uses events of its own.
 */
import { Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type Client, type TestResponse } from '@pixhook/test-helpers/adapters';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const code = (res: TestResponse): unknown => (res.json as { error?: { code?: string } } | undefined)?.error?.code;

describe.each(ADAPTERS)('semantics: $name', (adapter) => {
  describe('the ordering guard', () => {
    let client: Client | undefined;
    const applied: string[] = [];
    const errors: WebhookVerificationError[] = [];

    beforeAll(async () => {
      const webhooks = new Webhooks({
        secret: SECRET,
        ordering: { key: (event) => `image:${event.data.object.id}` },
      });
      webhooks.on(['image.created', 'image.deleted'], (event) => void applied.push(`${event.type} ${event.id}`));
      webhooks.onError((error) => void errors.push(error));
      client = await adapter.create(webhooks);
    });
    afterAll(async () => {
      await client?.close();
    });

    it('a newer image.deleted then an older image.created of the same image: both 200, only the newer applied', async () => {
      const image = { id: `img_${globalThis.crypto.randomUUID()}` };
      const deleted = createTestEvent('image.deleted', image, { created: 1_700_000_060 });
      const created = createTestEvent('image.created', image, { created: 1_700_000_000 });
      const newer = await client!.send(delivery(deleted));
      const older = await client!.send(delivery(created));
      expect([newer.status, newer.json]).toEqual([200, { received: true }]);
      // Acknowledged, so the service stops retrying it: not a duplicate, not an error.
      expect([older.status, older.json]).toEqual([200, { received: true }]);
      expect(applied).toEqual([`image.deleted ${deleted.id}`]);
      expect(errors.map((error) => error.code)).toEqual(['STALE_EVENT']);
      expect(errors[0]?.message).toContain(created.id);
    });
  });

  describe('named handlers', () => {
    let client: Client | undefined;
    const runs: string[] = [];
    const errors: WebhookVerificationError[] = [];
    let billingFailures = 1;

    beforeAll(async () => {
      const webhooks = new Webhooks({ secret: SECRET });
      webhooks.on('image.created', { id: 'billing' }, () => {
        runs.push('billing');
        if (billingFailures > 0) {
          billingFailures -= 1;
          throw new Error('billing is down');
        }
      });
      // Registered after the failing one: a named failure does not stop it.
      webhooks.on('image.created', { id: 'thumbnails' }, () => void runs.push('thumbnails'));
      webhooks.onError((error) => void errors.push(error));
      client = await adapter.create(webhooks);
    });
    afterAll(async () => {
      await client?.close();
    });

    it('one failing: 500 and the other ran; the retry runs only the failed one; then a duplicate', async () => {
      const event = createTestEvent('image.created', { id: 'img_named' });
      const first = await client!.send(delivery(event));
      expect([first.status, code(first)]).toEqual([500, 'HANDLER_FAILED']);
      expect(first.text).not.toContain('billing is down');
      expect(runs.sort()).toEqual(['billing', 'thumbnails']);
      expect(errors.map((error) => error.code)).toEqual(['HANDLER_FAILED']);

      runs.length = 0;
      const retry = await client!.send(delivery(event));
      expect([retry.status, retry.json]).toEqual([200, { received: true }]);
      expect(runs).toEqual(['billing']);

      runs.length = 0;
      const third = await client!.send(delivery(event));
      expect([third.status, third.json]).toEqual([200, { received: true, duplicate: true }]);
      expect(runs).toEqual([]);
      expect(errors).toHaveLength(1);
    });
  });
});
