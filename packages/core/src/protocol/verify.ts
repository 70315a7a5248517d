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
import { type ParsedSignatureHeader, parseSignatureHeader } from './signature-header.js';
import { hmacSha256Web } from './web-crypto.js';

/** What verification needs to know: the secrets, the tolerance and the clock (of `WebhooksOptions`, checked). */
export interface VerifyOptions {
  /** One or more secrets (a rotation): a signature matching any is accepted. */
  readonly secrets: readonly string[];
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

/**
 * Step 3: any `v1` equal, in constant time, to any expected signature; returns the index of the
 * secret whose signature matched.
 */
export function matchSignature(expected: readonly Uint8Array[], v1: readonly string[]): number {
  for (const candidate of v1) {
    // A v1 that is not 64 hex digits can never match; skipping it leaks nothing about secrets.
    const bytes = hexToBytes32(candidate, v1Bytes);
    if (!bytes) continue;
    for (let i = 0; i < expected.length; i++) {
      if (bytesEqual(expected[i] as Uint8Array, bytes)) return i;
    }
  }
  throw new WebhookVerificationError(
    'SIGNATURE_MISMATCH',
    "No v1 signature matches: check that the secret is this endpoint's signing secret, and that the raw body reaches pixhook unmodified (not parsed and re-serialised JSON).",
  );
}

/** Steps 4–6: parse the signed body, then check the unsigned headers against it. */
export function checkBody(
  body: Uint8Array,
  headers: DeliveryHeaders,
  timestamp: number,
  secretIndex: number,
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
  return { event, timestamp, deliveryId, secretIndex };
}

/**
 * The whole authenticity-and-shape decision, synchronously, on `node:crypto`. Throws a
 * `WebhookVerificationError` for every 400 row of the contract, in the contract's order; throws a
 * plain `Error` at once where the runtime has no `node:crypto`.
 */
export function verifyDelivery(options: VerifyOptions, body: Uint8Array, headers: DeliveryHeaders): VerifiedDelivery {
  // Up front, so a runtime without node:crypto fails the same way for every request, not only valid ones.
  if (!getNodeCrypto()) throw nodeCryptoUnavailable();
  const { t, timestamp, v1 } = checkHeader(options, headers);
  const keys = hmacKeys(options.secrets);
  const secretIndex = matchSignature(
    keys.length === 1 ? [hmacSha256(keys[0] as HmacKey, t, body)] : keys.map((key) => hmacSha256(key, t, body)),
    v1,
  );
  return checkBody(body, headers, timestamp, secretIndex);
}

/**
 * The same decision as `verifyDelivery`, step for step, with the HMAC on Web Crypto: for runtimes
 * without `node:crypto`. Rejects with the same errors on the same inputs.
 */
export async function verifyDeliveryWeb(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
): Promise<VerifiedDelivery> {
  const { t, timestamp, v1 } = checkHeader(options, headers);
  const secretIndex = matchSignature(
    await Promise.all(options.secrets.map((secret) => hmacSha256Web(secret, t, body))),
    v1,
  );
  return checkBody(body, headers, timestamp, secretIndex);
}

/**
 * `verifyDelivery` where `node:crypto` exists (synchronous, the faster path), else
 * `verifyDeliveryWeb`. Used by `handle()` and `verifyAsync()`.
 */
export function verifyDeliveryAnywhere(
  options: VerifyOptions,
  body: Uint8Array,
  headers: DeliveryHeaders,
): VerifiedDelivery | Promise<VerifiedDelivery> {
  return getNodeCrypto() ? verifyDelivery(options, body, headers) : verifyDeliveryWeb(options, body, headers);
}
