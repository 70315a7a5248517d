// A secret per tenant: the `secret` option as a function of the tenant, its answers cached (with a
// bound, found and not-found alike), and the verification of a delivery against them.
import { LRUCache } from 'lru-cache';
import { cancelDeadline, type Deadline, setDeadline } from '../util/deadlines.js';
import { isThenable, type Maybe } from '../util/maybe.js';
import { describeType } from '../util/option-checks.js';
import { WebhookVerificationError } from './errors.js';
import type { DeliveryHeaders } from './headers.js';
import { NO_SECRETS, resolveSecrets, type SecretLookup, type SecretSet } from './secrets.js';
import {
  checkHeader,
  refuseWithoutSecret,
  type VerifiedDelivery,
  type VerifyOptions,
  verifyDeliveryAnywhere,
} from './verify.js';

/** Longest tenant looked up, in characters: a longer one (from a request, untrusted) has no secret. */
export const MAX_TENANT_CHARACTERS = 256;

/** How a tenant's secrets are cached (the `secretCache` option). */
export interface SecretCacheOptions {
  /** Most tenants kept (least recently used go first), and as many tenants found to have no secret, kept apart. @default 1000 */
  max?: number;
  /** How long a lookup's answer is kept, in ms: found or not found (a failure is never kept). @default 60_000 */
  ttlMs?: number;
}

const CACHE_KEYS = ['max', 'ttlMs'] as const;

function positive(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`pixhook: secretCache.${name} must be a positive whole number; got ${describeType(value)}.`);
  }
  return value;
}

function lookupFailed(cause: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'SECRET_UNAVAILABLE',
    "The signing secret for this request's tenant could not be looked up, so it was not verified; the service will retry it.",
    { cause },
  );
}

/** The tenants' secrets: the lookup, its cache, and the lookups under way (one per tenant at a time). */
export class TenantSecrets {
  readonly #lookup: SecretLookup;
  readonly #cache: LRUCache<string, SecretSet> | undefined;
  /**
   * Tenants the lookup found nothing for, apart: a flood of made-up tenants (any request can name
   * one) evicts only these, never the real tenants' secrets.
   */
  readonly #unknown: LRUCache<string, SecretSet> | undefined;
  readonly #pending = new Map<string, Promise<SecretSet>>();
  /** Bumped by `forget()`: a lookup that started before it is not cached. */
  #generation = 0;

  constructor(lookup: SecretLookup, cache: SecretCacheOptions | false | undefined) {
    this.#lookup = lookup;
    if (cache === false) return;
    if (cache !== undefined && (typeof cache !== 'object' || cache === null)) {
      throw new TypeError(`pixhook: secretCache must be { max, ttlMs } or false; got ${describeType(cache)}.`);
    }
    const given = cache ?? {};
    for (const key of Object.keys(given)) {
      if (!(CACHE_KEYS as readonly string[]).includes(key)) {
        throw new TypeError(
          `pixhook: secretCache has an unknown option ${JSON.stringify(key.slice(0, 40))}; it takes max and ttlMs.`,
        );
      }
    }
    const max = positive(given.max, 1000, 'max');
    const ttl = positive(given.ttlMs, 60_000, 'ttlMs');
    this.#cache = new LRUCache<string, SecretSet>({ max, ttl });
    this.#unknown = new LRUCache<string, SecretSet>({ max, ttl });
  }

  /**
   * The tenant's secrets: at once from the cache, else a promise of the lookup's answer (one
   * lookup per tenant at a time). `NO_SECRETS` for a tenant without any. Throws (or rejects) 503
   * `SECRET_UNAVAILABLE` when the lookup fails, answers something that is not secrets, or has not
   * answered within `timeoutMs` (then the next delivery calls it again: a lookup that never
   * settles must not hold every later delivery of its tenant).
   */
  secretsFor(tenant: string, timeoutMs?: number): Maybe<SecretSet> {
    const cached = this.#cache?.get(tenant) ?? this.#unknown?.get(tenant);
    if (cached !== undefined) return cached;
    const pending = this.#pending.get(tenant);
    if (pending !== undefined) return pending;
    let answer: unknown;
    try {
      answer = this.#lookup(tenant);
    } catch (cause) {
      throw lookupFailed(cause);
    }
    if (!isThenable(answer)) return this.#keep(tenant, this.#checked(answer), this.#generation);
    const generation = this.#generation;
    let deadline: Deadline | undefined;
    // Only its own entry: after forget(), a newer lookup of this tenant may be the one under way.
    const settled = () => {
      if (deadline !== undefined) cancelDeadline(deadline);
      if (this.#pending.get(tenant) === looked) this.#pending.delete(tenant);
    };
    const answered =
      timeoutMs === undefined
        ? Promise.resolve(answer)
        : new Promise<unknown>((resolve, reject) => {
            deadline = setDeadline(timeoutMs, () =>
              reject(
                new Error(`pixhook: the secret lookup did not answer within ${timeoutMs} ms (deliveryTimeoutMs).`),
              ),
            );
            Promise.resolve(answer).then(resolve, reject);
          });
    const looked: Promise<SecretSet> = answered.then(
      (value) => {
        settled();
        return this.#keep(tenant, this.#checked(value), generation);
      },
      (cause: unknown) => {
        settled();
        throw lookupFailed(cause);
      },
    );
    this.#pending.set(tenant, looked);
    return looked;
  }

  /** Forgets the cached secrets of `tenant`, or of every tenant: the next delivery looks them up again. */
  forget(tenant?: string): void {
    this.#generation++;
    if (tenant === undefined) {
      this.#cache?.clear();
      this.#unknown?.clear();
      this.#pending.clear();
    } else {
      this.#cache?.delete(tenant);
      this.#unknown?.delete(tenant);
      this.#pending.delete(tenant);
    }
  }

  /** A lookup's answer as a `SecretSet`; throws `SECRET_UNAVAILABLE` for one that is not secrets. */
  #checked(answer: unknown): SecretSet {
    if (answer === undefined || answer === null || (Array.isArray(answer) && answer.length === 0)) return NO_SECRETS;
    try {
      return resolveSecrets(answer, "the secret lookup's answer");
    } catch (cause) {
      throw lookupFailed(cause);
    }
  }

  #keep(tenant: string, secrets: SecretSet, generation: number): SecretSet {
    if (generation === this.#generation)
      (secrets.list.length === 0 ? this.#unknown : this.#cache)?.set(tenant, secrets);
    return secrets;
  }
}

/**
 * Verification with a tenant's secrets, in the contract's order: the signature header and the
 * timestamp first (no lookup for a request refused on them), then the lookup, then the signature
 * and the body. No tenant, a tenant longer than `MAX_TENANT_CHARACTERS`, or a tenant without a
 * secret is refused as `SIGNATURE_MISMATCH`, as a wrong signature is (see `refuseWithoutSecret`).
 * Synchronous when the tenant's secrets are cached (and `node:crypto` is there).
 */
export function verifyForTenant(
  options: VerifyOptions & { readonly deliveryTimeoutMs?: number | undefined },
  tenants: TenantSecrets,
  body: Uint8Array,
  headers: DeliveryHeaders,
  tenant: unknown,
): Maybe<VerifiedDelivery> {
  const header = checkHeader(options, headers);
  if (typeof tenant !== 'string' || tenant === '') {
    return refuseWithoutSecret(
      options,
      body,
      headers,
      header,
      "no tenant came with this request: give the adapter's tenant option, or a :tenant path parameter (README: A secret per tenant).",
    );
  }
  if (tenant.length > MAX_TENANT_CHARACTERS) {
    return refuseWithoutSecret(
      options,
      body,
      headers,
      header,
      `the tenant is longer than ${MAX_TENANT_CHARACTERS} characters.`,
    );
  }
  const verify = (secrets: SecretSet): Maybe<VerifiedDelivery> => {
    if (secrets.list.length === 0) {
      return refuseWithoutSecret(options, body, headers, header, 'the secret lookup found no secret for this tenant.');
    }
    const verified = verifyDeliveryAnywhere(options, body, headers, secrets, header);
    if (verified instanceof Promise) return verified.then((delivery) => withTenant(delivery, tenant));
    return withTenant(verified, tenant);
  };
  // The lookup is part of the delivery's budget: it may not hold the answer past it.
  const secrets = tenants.secretsFor(tenant, options.deliveryTimeoutMs);
  return secrets instanceof Promise ? secrets.then(verify) : verify(secrets);
}

function withTenant(delivery: VerifiedDelivery, tenant: string): VerifiedDelivery {
  delivery.tenant = tenant;
  return delivery;
}
