/**
 * RedisStore with secrets per tenant, on a real redis-server and with every client library: the
 * store's keys are scoped by tenant (`<tenant, URI-encoded>/<event id>`), so two tenants' deliveries
 * of one event id are both processed, and a tenant's redelivery is a duplicate.
 */

import { type AnyEvent, eventKey, type HandlerContext, Webhooks } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { RedisStore } from '@pixhook/redis';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { forTenant, TENANT_SECRETS } from '@pixhook/test-helpers/tenants';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLIENTS, uniquePrefix } from './helpers/clients.js';

describeWithRedis('RedisStore with secrets per tenant', () => {
  let server: RedisServer;
  let inspect: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    inspect = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    inspect?.disconnect();
    await server?.close();
  });

  it.each(CLIENTS.map((client) => [client.name, client] as const))(
    "%s: two tenants' deliveries of one event id are both processed; a tenant's redelivery is a duplicate",
    async (_, under) => {
      const connection = await under.connect(server.port);
      try {
        const prefix = uniquePrefix('tenants');
        const webhooks = new Webhooks({
          secret: (tenant) => TENANT_SECRETS[tenant],
          store: new RedisStore(connection.client, { prefix }),
        });
        const runs: HandlerContext[] = [];
        webhooks.on('image.created', (_event, context) => void runs.push(context));
        const event = createTestEvent('image.created') as AnyEvent;
        for (const tenant of Object.keys(TENANT_SECRETS)) {
          const answer = await webhooks.handle(forTenant(tenant, event));
          expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { received: true }]);
        }
        expect(runs.map((context) => context.tenant)).toEqual(Object.keys(TENANT_SECRETS));
        expect(runs.map((context) => context.secret)).toEqual([{ index: 0 }, { index: 0 }]);
        // The service's redelivery, with a new delivery id, for each tenant: duplicates.
        for (const tenant of Object.keys(TENANT_SECRETS)) {
          const again = await webhooks.handle(forTenant(tenant, event));
          expect([again.status, JSON.parse(again.body)]).toEqual([200, { received: true, duplicate: true }]);
        }
        expect(runs).toHaveLength(2);
        // One completed record per tenant, under the tenant-scoped key; none under the bare id.
        const keys = (await inspect.keys(`${prefix}*`)).sort();
        expect(keys).toEqual(
          [`${prefix}${eventKey(event.id, 'a b/ü')}`, `${prefix}${eventKey(event.id, 'acme')}`].sort(),
        );
        expect(keys).toContain(`${prefix}a%20b%2F%C3%BC/${event.id}`);
        expect(await inspect.exists(`${prefix}${event.id}`)).toBe(0);
      } finally {
        await connection.close();
      }
    },
  );

  it('a tenant that the lookup does not know is refused and marks nothing', async () => {
    const connection = await CLIENTS[0]!.connect(server.port);
    try {
      const prefix = uniquePrefix('tenants');
      const webhooks = new Webhooks({
        secret: (tenant) => TENANT_SECRETS[tenant],
        store: new RedisStore(connection.client, { prefix }),
      });
      webhooks.onError(() => {});
      const runs: string[] = [];
      webhooks.on('image.created', (event) => void runs.push(event.id));
      const event = createTestEvent('image.created') as AnyEvent;
      // Signed with acme's secret, but naming another tenant: not acme's delivery.
      const stranger = { ...forTenant('acme', event), tenant: 'globex' };
      expect((await webhooks.handle(stranger)).status).toBe(400);
      expect(await inspect.keys(`${prefix}*`)).toEqual([]);
      // acme's own delivery of the event is still processed.
      expect(JSON.parse((await webhooks.handle(forTenant('acme', event))).body)).toEqual({ received: true });
      expect(runs).toEqual([event.id]);
    } finally {
      await connection.close();
    }
  });
});
