import {
  bytesEqual,
  getNodeCrypto,
  type HmacKey,
  hexToBytes32,
  hmacKeys,
  hmacSha256,
  nodeCryptoUnavailable,
} from './crypto.js';
import { WebhookVerificationError } from './errors.js';
import type { AnyEvent } from './events.js';
import type { DeliveryHeaders } from './headers.js';
import { parseEvent } from './parse-event.js';
import type { SecretMatch, SecretSet } from './secrets.js';
import { type ParsedSignatureHeader, parseSignatureHeader } from './signature-header.js';
import { hmacSha256Web } from './web-crypto.js';

/** What verification needs to know: the secrets, the tolerance and the clock (of `WebhooksOptions`, checked). */
export interface VerifyOptions {
  /** One or more secrets (a rotation): a signature matching any that has not expired is accepted. */
  readonly secrets: SecretSet;
  /** Seconds the signature's `t` may differ from now; `false`: no check. */
  readonly tolerance: number | false;
  /** The clock, in milliseconds. */
  readonly now: () => number;
}

/** A delivery that passed every check. */
export interface VerifiedDelivery {
  event: AnyEvent;
  /** The signature's `t`, in Unix seconds. */
  timestamp: number;
  /** The X-Service-Delivery header. */
  deliveryId: string;
  /** Which of the secrets matched (0: the first): an operator watches an old secret go quiet. */
  secretIndex: number;
  /** Which secret matched: its index, and its label when it has one. */
  secret: SecretMatch;
  /** The tenant whose secret verified it, when secrets are looked up per tenant. */
  tenant?: string;
}

/** Steps 1–2: parse the header and check the timestamp. */
export function checkHeader(
  options: Pick<VerifyOptions, 'tolerance' | 'now'>,
  headers: DeliveryHeaders,
): ParsedSignatureHeader {
  const parsed = parseSignatureHeader(headers.signature);
  if (options.tolerance !== false) {
    const age = Math.floor(options.now() / 1000) - parsed.timestamp;
    if (Math.abs(age) > options.tolerance) {
      throw new WebhookVerificationError(
        'TIMESTAMP_OUT_OF_TOLERANCE',
        age > 0
          ? `The signature timestamp is ${age} s old, beyond the ${options.tolerance} s tolerance: a replayed or long-delayed delivery, or a server clock out of sync (check NTP).`
          : `The signature timestamp is ${-age} s in the future, beyond the ${options.tolerance} s tolerance: check this server's clock (NTP).`,
      );
    }
  }
  return parsed;
}

/** Where each `v1` is decoded: verification is synchronous, so one buffer serves every call. */
const v1Bytes = new Uint8Array(32);

/** The index of the first of `expected` (only those in `order`, when given) equal to any `v1`, in constant time each; -1 when none. */
function firstMatch(expected: readonly Uint8Array[], v1: readonly string[], order?: readonly number[]): number {
  for (const candidate of v1) {
    // A v1 that is not 64 hex digits can never match; skipping it leaks nothing about secrets.
    const bytes = hexToBytes32(candidate, v1Bytes);
    if (!bytes) continue;
    if (order === undefined) {
      for (let i = 0; i < expected.length; i++) {
        if (bytesEqual(expected[i] as Uint8Array, bytes)) return i;
      }
    } else {
      for (const i of order) {
        if (bytesEqual(expected[i] as Uint8Array, bytes)) return i;
      }
    }
  }
  return -1;
}

/** The 400 for a signature that matches no secret; `cause` tells `onError` more (never the answer). */
export function signatureMismatch(cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError(
    'SIGNATURE_MISMATCH',
    "No v1 signature matches: check that the secret is this endpoint's signing secret, and that the raw body reaches pixhook unmodified (not parsed and re-serialised JSON).",
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Step 3: any `v1` equal, in constant time, to any expected signature; returns the index of the
 * secret whose signature matched.
 */
export function matchSignature(expected: readonly Uint8Array[], v1: readonly string[]): number {
  const i = firstMatch(expected, v1);
  if (i < 0) throw signatureMismatch();
  return i;
}

/**
 * Step 3 with `notAfter`: the secrets still valid at `nowMs` first; a signature that matches only
 * a secret past its `notAfter` is refused with a message saying so (only a holder of that secret
 * can read it).
 */
function matchLive(set: SecretSet, expected: readonly Uint8Array[], v1: readonly string[], nowMs: number): number {
  if (!set.expires) return matchSignature(expected, v1);
  const live: number[] = [];
  const expired: number[] = [];
  set.list.forEach((one, i) => {
    (one.notAfter === undefined || nowMs < one.notAfter ? live : expired).push(i);
  });
  const i = firstMatch(expected, v1, live);
  if (i >= 0) return i;
  const j = firstMatch(expected, v1, expired);
  if (j < 0) throw signatureMismatch();
  const { match, notAfter } = set.list[j] as (typeof set.list)[number];
  throw new WebhookVerificationError(
    'SIGNATURE_MISMATCH',
    `The signature matches secret ${match.label === undefined ? `#${match.index}` : JSON.stringify(match.label)}, whose notAfter (${new Date(notAfter as number).toISOString()}) has passed: finish the rotation in the service's dashboard (sign with the new secret), or move notAfter later.`,
  );
}

/** Steps 4–6: parse the signed body, then check the unsigned headers against it. */
export function checkBody(
  body: Uint8Array,
  headers: DeliveryHeaders,
  timestamp: number,
  secret: SecretMatch,
): VerifiedDelivery {
  const event = parseEvent(body);
  // The headers are not signed: they may only agree with the body, never steer dispatch.
  const eventHeader = headers.event;
  if (eventHeader !== event.type) {
    throw new WebhookVerificationError(
      'EVENT_TYPE_MISMATCH',
      eventHeader === undefined
        ? 'The X-Service-Event header is missing; the service sends it with every delivery.'
        : "The X-Service-Event header does not equal the signed body's type.",
    );
  }
  const deliveryId = headers.delivery;
  if (deliveryId === undefined || deliveryId.trim() === '') {
    throw new WebhookVerificationError(
      'MISSING_HEADER',
      'The X-Service-Delivery header is missing or empty; the service sends a delivery id with every delivery.',
    );
  }
  return { event, timestamp, deliveryId, secretIndex: secret.index, secret };
}

/**
 * The whole authenticity-and-shape decision, synchronously, on `node:crypto`. Throws a
 * `WebhookVerificationError` for every 400 row of the contract, in the contract's order; throws a
 * plain `Error` at once where the runtime has no `node:crypto`. `secrets` (the options' by default)
 * and `header` (the signature header already checked) are given for a tenant's secrets.
 */
export function verifyDelivery(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
  secrets: SecretSet = options.secrets,
  header?: ParsedSignatureHeader,
): VerifiedDelivery {
  // Up front, so a runtime without node:crypto fails the same way for every request, not only valid ones.
  if (!getNodeCrypto()) throw nodeCryptoUnavailable();
  const { t, timestamp, v1 } = header ?? checkHeader(options, headers);
  const keys = hmacKeys(secrets.secrets);
  const index = matchLive(
    secrets,
    keys.length === 1 ? [hmacSha256(keys[0] as HmacKey, t, body)] : keys.map((key) => hmacSha256(key, t, body)),
    v1,
    secrets.expires ? options.now() : 0,
  );
  return checkBody(body, headers, timestamp, (secrets.list[index] as SecretSet['list'][number]).match);
}

/**
 * The same decision as `verifyDelivery`, step for step, with the HMAC on Web Crypto: for runtimes
 * without `node:crypto`. Rejects with the same errors on the same inputs.
 */
export async function verifyDeliveryWeb(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
  secrets: SecretSet = options.secrets,
  header?: ParsedSignatureHeader,
): Promise<VerifiedDelivery> {
  const { t, timestamp, v1 } = header ?? checkHeader(options, headers);
  const index = matchLive(
    secrets,
    await Promise.all(secrets.secrets.map((secret) => hmacSha256Web(secret, t, body))),
    v1,
    secrets.expires ? options.now() : 0,
  );
  return checkBody(body, headers, timestamp, (secrets.list[index] as SecretSet['list'][number]).match);
}

/**
 * `verifyDelivery` where `node:crypto` exists (synchronous, the faster path), else
 * `verifyDeliveryWeb`. Used by `handle()` and `verifyAsync()`.
 */
export function verifyDeliveryAnywhere(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
  secrets: SecretSet = options.secrets,
  header?: ParsedSignatureHeader,
): VerifiedDelivery | Promise<VerifiedDelivery> {
  return getNodeCrypto()
    ? verifyDelivery(options, body, headers, secrets, header)
    : verifyDeliveryWeb(options, body, headers, secrets, header);
}

/** A throwaway key: a tenant without a secret costs one HMAC, as a tenant with one does. */
let decoy: SecretSet | undefined;

/**
 * A tenant with no secret (or no tenant): the same `SIGNATURE_MISMATCH` as a wrong signature, after
 * as much work as one secret takes, so neither the answer nor its time tells whether the tenant
 * exists. `why` becomes the error's `cause`, for `onError` only.
 */
export function refuseWithoutSecret(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
  header: ParsedSignatureHeader,
  why: string,
): Promise<never> | never {
  if (decoy === undefined) {
    const secret = globalThis.crypto.randomUUID();
    decoy = { list: [{ secret, match: { index: 0 }, notAfter: undefined }], secrets: [secret], expires: false };
  }
  // The decoy's own SIGNATURE_MISMATCH, given the reason as its cause: one error per refusal, as a
  // wrong signature makes. Three (the decoy's, the reason, a new mismatch) cost ~1.5× the CPU of a
  // wrong signature at 1 KiB (bench/src/tenant), which timed answers could tell apart.
  const refuse = (thrown?: unknown): never => {
    const error =
      thrown instanceof WebhookVerificationError && thrown.code === 'SIGNATURE_MISMATCH' ? thrown : signatureMismatch();
    Object.defineProperty(error, 'cause', { value: reasonFor(why), writable: true, configurable: true });
    throw error;
  };
  try {
    const checked = verifyDeliveryAnywhere(options, body, headers, decoy as SecretSet, header);
    // A random key never matches; if it ever did, the request is still refused.
    return checked instanceof Promise ? checked.then(() => refuse(), refuse) : refuse();
  } catch (thrown) {
    return refuse(thrown);
  }
}

/** The causes of refusals without a secret, one per reason (a few fixed texts), made once. */
const reasons = new Map<string, Error>();

function reasonFor(why: string): Error {
  let reason = reasons.get(why);
  if (reason === undefined) {
    reason = new Error(`pixhook: ${why}`);
    if (reasons.size < 16) reasons.set(why, reason);
  }
  return reason;
}
