import { bytesToHex, hmacSha256, toBytes } from './crypto.js';
import { assertSecret } from './secrets.js';

/**
 * Signs a body the way the service does: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`.
 * Use it in tests, or to build deliveries by hand; `@pixhook/core/testing` builds whole requests.
 *
 * @param secret - the endpoint's signing secret
 * @param rawBody - the exact bytes (or UTF-8 string) that will be sent
 * @param timestamp - Unix seconds, or digits as text (leading zeros are kept and signed);
 *   @default the current time
 * @example
 * const header = sign(process.env.SIGNING_SECRET, body) // 't=1700000000,v1=3a5f…'
 */
export function sign(secret: string, rawBody: Uint8Array | string, timestamp?: number | string): string {
  assertSecret(secret, 'secret');
  const t = timestamp === undefined ? String(Math.floor(Date.now() / 1000)) : String(timestamp);
  if (!/^[0-9]+$/.test(t)) {
    throw new TypeError(
      `pixhook: sign() needs a timestamp that is a non-negative whole number of Unix seconds, got ${t}.`,
    );
  }
  return `t=${t},v1=${bytesToHex(hmacSha256(secret, t, toBytes(rawBody)))}`;
}
