// Secrets per tenant and schemas, as the engines' and stores' tests use them: two tenants (one
// whose name needs URI-encoding), a delivery signed with a tenant's secret, and a Standard Schema
// written by hand (the packages' tests do not depend on zod).
import type { AnyEvent, StandardSchemaV1 } from '@pixhook/core';
import { createSignedRequest } from '@pixhook/core/testing';

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
