// Secrets per tenant and schemas, as the engines' and stores' tests use them: two tenants (one
// whose name needs URI-encoding), a delivery signed with a tenant's secret, and a Standard Schema
// written by hand (the packages' tests do not depend on zod).
import { type AnyEvent, type StandardSchemaV1, Webhooks } from '@pixhook/core';
import { createSignedRequest } from '@pixhook/core/testing';
import { expect } from 'vitest';

/** One secret per tenant; one tenant's name has a space, a slash and a non-ASCII letter. */
export const TENANT_SECRETS: Readonly<Record<string, string>> = {
  acme: 'whsec_tenant_acme_1a2b',
  'a b/ü': 'whsec_tenant_odd_3c4d',
};

/** The tenants of `TENANT_SECRETS`. */
export const TENANTS = Object.keys(TENANT_SECRETS);

/** A `handle()` input: `event` signed with `tenant`'s secret, naming that tenant. */
export function forTenant(tenant: string, event: AnyEvent) {
  const { headers, body } = createSignedRequest(event, { secret: TENANT_SECRETS[tenant] as string });
  return { method: 'POST', headers, body, tenant };
}

/**
 * A Standard Schema v1 validator: `data.object.bytes` must be a number, unless `lenient()` says
 * to let everything through (the schema, fixed after a mismatch).
 */
export function bytesSchema(lenient: () => boolean = () => false): StandardSchemaV1<unknown, { bytes: number }> {
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value) =>
        lenient() || typeof (value as { bytes?: unknown } | null)?.bytes === 'number'
          ? { value: value as { bytes: number } }
          : { issues: [{ message: 'Expected a number', path: ['bytes'] }] },
    },
  };
}

/**
 * A `Webhooks` whose secret is looked up in `secrets` (sync, or async with `async: true`), and what
 * it saw: each handled event's `context.tenant`, and each error told to `onError` as
 * `<code>: <cause's message>`.
 */
export function recordingTenantWebhooks<TRequest = unknown>(
  secrets: Readonly<Record<string, string>>,
  options: { async?: boolean } = {},
) {
  const webhooks = new Webhooks<Record<string, object>, TRequest>({
    secret: options.async ? async (tenant) => secrets[tenant] : (tenant) => secrets[tenant],
  });
  const tenants: (string | undefined)[] = [];
  const causes: string[] = [];
  webhooks.onAny((_event, context) => void tenants.push(context.tenant));
  webhooks.onError((error) => void causes.push(`${error.code}: ${(error.cause as Error | undefined)?.message}`));
  return { webhooks, tenants, causes };
}

/** What `onError` hears (as `recordingTenantWebhooks` records it) for a request that came with no tenant. */
export const NO_TENANT_CAUSE = /^SIGNATURE_MISMATCH: pixhook: no tenant came with this request/;

/**
 * Adapters' `tenant` options that give no tenant: one that throws, one answering each of `answers`
 * (anything but a string, or a promise), and an async one that rejects.
 */
export function brokenTenantOptions(...answers: unknown[]): ((request: never) => unknown)[] {
  return [
    () => {
      throw new Error('tenant parser bug');
    },
    ...answers.map((answer) => () => answer),
    async () => {
      throw new Error('async tenant parser bug');
    },
  ];
}

/** Runs `body`, then fails when a promise rejection was left unhandled meanwhile. */
export async function expectNoUnhandledRejection(body: () => Promise<void>): Promise<void> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    await body();
    // Node reports an unhandled rejection once the microtasks have run, before the next turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
}
