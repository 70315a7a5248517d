/**
 * A secret per tenant and schemas (issue 28, parts 3 and 4), run against every adapter and
 * framework version of the contract table: each mounts at `/webhooks/:tenant` as its README's "A
 * secret per tenant" says (the route's `tenant` parameter, or its `tenant` option where it has no
 * route parameters), and the same request must get the same answer everywhere.
 */
import { type HandlerContext, sign, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { ADAPTERS, type Client, type TestResponse } from '@pixhook/test-helpers/adapters';
import { delivery, errorCode, nowSeconds, SECRET } from '@pixhook/test-helpers/deliveries';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

const A_OLD = 'whsec_tenant_a_old_5d1f0c';
const A_NEW = 'whsec_tenant_a_new_8e27b4';
const B = 'whsec_tenant_b_3a9c61';

interface Run {
  id: string;
  tenant: string | undefined;
  secret: HandlerContext['secret'];
}

describe.each(ADAPTERS)('tenants: $name', (adapter) => {
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  /**
   * A fresh app at `/webhooks/:tenant` whose secrets are looked up per tenant: tenant a rotates
   * (an old secret, then a labelled new one), b has one, `down` fails the lookup, others have none.
   */
  async function mountTenants() {
    const lookups: string[] = [];
    const webhooks = new Webhooks({
      secret: async (tenant) => {
        lookups.push(tenant);
        if (tenant === 'a') return [A_OLD, { secret: A_NEW, label: 'current' }];
        if (tenant === 'b') return B;
        if (tenant === 'down') throw new Error('the secrets database is down');
        return undefined;
      },
    });
    const runs: Run[] = [];
    const errors: { code: string; tenant: string | undefined; cause: unknown }[] = [];
    webhooks.onAny((event, context) => {
      runs.push({ id: event.id, tenant: context.tenant, secret: context.secret });
    });
    webhooks.onError((error, context) => {
      errors.push({ code: error.code, tenant: context.tenant, cause: error.cause });
    });
    if (adapter.createTenant === undefined) throw new Error(`${adapter.name} has no createTenant in test/helpers`);
    const client = await adapter.createTenant(webhooks);
    clients.push(client);
    return { client, runs, errors, lookups };
  }

  const to = (tenant: string, secret: string, event = createTestEvent('image.created')) => ({
    ...delivery(event, { secret }),
    path: `/webhooks/${tenant}`,
  });

  function expectError(res: TestResponse, status: number, code: string): void {
    expect({ status: res.status, code: errorCode(res.json) }).toEqual({ status, code });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  }

  it("tenant a's secret on /webhooks/a → 200; the handler sees the tenant and which secret matched", async () => {
    const { client, runs, errors } = await mountTenants();
    const request = to('a', A_NEW);
    const res = await client.send(request);
    expect({ status: res.status, json: res.json }).toEqual({ status: 200, json: { received: true } });
    expect(runs).toEqual([{ id: JSON.parse(request.body).id, tenant: 'a', secret: { index: 1, label: 'current' } }]);
    // The older secret of the rotation verifies too, and says so.
    expect((await client.send(to('a', A_OLD))).status).toBe(200);
    expect(runs[1]).toMatchObject({ tenant: 'a', secret: { index: 0 } });
    expect(runs[1]?.secret?.label).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it("tenant b's secret on /webhooks/a → 400 SIGNATURE_MISMATCH, no handler runs", async () => {
    const { client, runs, errors } = await mountTenants();
    const res = await client.send(to('a', B));
    expectError(res, 400, 'SIGNATURE_MISMATCH');
    for (const secret of [A_OLD, A_NEW, B]) expect(res.text).not.toContain(secret);
    expect(runs).toEqual([]);
    expect(errors.map(({ code, tenant }) => ({ code, tenant }))).toEqual([{ code: 'SIGNATURE_MISMATCH', tenant: 'a' }]);
    // b's own path accepts it.
    expect((await client.send(to('b', B))).status).toBe(200);
    expect(runs.map((r) => r.tenant)).toEqual(['b']);
  });

  it('an unknown tenant → 400 with exactly the answer of a wrong signature (it does not reveal which tenants exist)', async () => {
    const { client, runs, errors, lookups } = await mountTenants();
    const wrong = await client.send(to('a', B));
    const nobody = await client.send(to('nobody', B));
    expectError(nobody, 400, 'SIGNATURE_MISMATCH');
    expect({ status: nobody.status, type: nobody.headers['content-type'], text: nobody.text }).toEqual({
      status: wrong.status,
      type: wrong.headers['content-type'],
      text: wrong.text,
    });
    expect(runs).toEqual([]);
    expect(lookups).toContain('nobody');
    // onError is told why (its cause), the sender is not.
    expect(errors[1]).toMatchObject({ code: 'SIGNATURE_MISMATCH', tenant: 'nobody' });
    expect(String((errors[1]?.cause as Error | undefined)?.message)).toMatch(/no secret for this tenant/);
  });

  it('a lookup that fails → 503 SECRET_UNAVAILABLE, told to onError with its cause', async () => {
    const { client, runs, errors } = await mountTenants();
    const res = await client.send(to('down', B));
    expectError(res, 503, 'SECRET_UNAVAILABLE');
    expect(res.text).not.toContain('database is down');
    expect(runs).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'SECRET_UNAVAILABLE', tenant: 'down' });
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toContain('the secrets database is down');
  });

  it('the same event id for tenants a and b runs once for each (idempotency is per tenant)', async () => {
    const { client, runs } = await mountTenants();
    const event = createTestEvent('image.created');
    expect((await client.send(to('a', A_NEW, event))).status).toBe(200);
    expect((await client.send(to('b', B, event))).status).toBe(200);
    // A redelivery to a is a duplicate: acknowledged, not run again.
    expect((await client.send(to('a', A_NEW, event))).status).toBe(200);
    expect(runs.map(({ id, tenant }) => ({ id, tenant }))).toEqual([
      { id: event.id, tenant: 'a' },
      { id: event.id, tenant: 'b' },
    ]);
  });

  it("an event its handler's schema refuses → 200, that handler does not run, onError is told SCHEMA_MISMATCH", async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const checked: number[] = [];
    const others: string[] = [];
    webhooks.on('image.created', { schema: z.object({ bytes: z.number() }) }, (event) => {
      checked.push(event.data.object.bytes);
    });
    webhooks.on('image.created', (event) => {
      others.push(event.id);
    });
    const errors: WebhookVerificationError[] = [];
    webhooks.onError((error) => {
      errors.push(error);
    });
    const client = await adapter.create(webhooks);
    clients.push(client);
    const bad = createTestEvent('image.created', { bytes: 'a lot' as never });
    const res = await client.send(delivery(bad));
    expect({ status: res.status, json: res.json }).toEqual({ status: 200, json: { received: true } });
    expect(checked).toEqual([]);
    expect(others).toEqual([bad.id]);
    expect(errors.map((e) => e.code)).toEqual(['SCHEMA_MISMATCH']);
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toMatch(/bytes/);
    // An event that fits runs it.
    const good = createTestEvent('image.created', { bytes: 1234 });
    expect((await client.send(delivery(good))).status).toBe(200);
    expect(checked).toEqual([1234]);
  });

  it('without a lookup the tenant is ignored: a plain secret verifies on /webhooks/:tenant too', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const runs: (string | undefined)[] = [];
    webhooks.onAny((_event, context) => void runs.push(context.tenant));
    const client = await adapter.createTenant!(webhooks);
    clients.push(client);
    const body = JSON.stringify(createTestEvent('image.created'));
    const res = await client.send({
      path: '/webhooks/acme',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'image.created',
        'x-service-delivery': globalThis.crypto.randomUUID(),
        'x-service-signature': sign(SECRET, body, nowSeconds()),
      },
      body,
    });
    expect(res.status).toBe(200);
    expect(runs).toEqual([undefined]);
  });
});
