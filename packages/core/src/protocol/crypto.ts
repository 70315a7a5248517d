import type * as NodeCrypto from 'node:crypto';

/**
 * `node:crypto` when the runtime has it. Looked up through `process.getBuiltinModule` rather than a
 * static import, so that bundling `@pixhook/core` for a runtime without Node built-ins (Workers,
 * browsers) does not fail; those runtimes verify with Web Crypto instead (web-crypto.ts).
 */
export const nodeCrypto: typeof NodeCrypto | undefined = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as typeof NodeCrypto | undefined;

let webCryptoOnly = false;

/**
 * @internal Test seam: `true` makes core behave as on a runtime without `node:crypto` (Workers,
 * browsers), so Node tests can run the Web Crypto path (and TextDecoder for UTF-8, not `node:buffer`).
 * Not part of the public API.
 */
export function setWebCryptoOnly(on: boolean): void {
  webCryptoOnly = on;
}

/** @internal Whether the test seam is on: parse-event.ts then decodes as Workers do, with TextDecoder. */
export function isWebCryptoOnly(): boolean {
  return webCryptoOnly;
}

/** `node:crypto`, or undefined where the runtime lacks it (or the test seam hides it). */
export function getNodeCrypto(): typeof NodeCrypto | undefined {
  return webCryptoOnly ? undefined : nodeCrypto;
}

/** The error of a synchronous call that needs `node:crypto` where there is none. */
export function nodeCryptoUnavailable(): Error {
  return new Error(
    'pixhook: node:crypto is not available in this runtime, so the synchronous verify() and sign() cannot run here; verify with `await webhooks.verifyAsync(rawBody, headers)` or `await webhooks.handle(…)` (as @pixhook/fetch does), which use Web Crypto.',
  );
}

const encoder = new TextEncoder();

/** UTF-8 bytes of a string, or the bytes themselves. */
export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data;
}

/** A secret as `createHmac` takes it: its text, or a key made from it once. */
export type HmacKey = string | NodeCrypto.KeyObject;

const keysOf = new WeakMap<readonly string[], readonly HmacKey[]>();

/**
 * The secrets of one `Webhooks` as HMAC keys, made once (`createSecretKey`) and kept with the
 * secrets' array: `createHmac` then skips encoding the secret on every delivery (~0.2 µs).
 */
export function hmacKeys(secrets: readonly string[]): readonly HmacKey[] {
  let keys = keysOf.get(secrets);
  if (keys === undefined) {
    const crypto = getNodeCrypto();
    keys = crypto ? secrets.map((secret) => crypto.createSecretKey(secret, 'utf8')) : secrets;
    keysOf.set(secrets, keys);
  }
  return keys;
}

/** HMAC-SHA256 of `t.` followed by the body's bytes, on Node's synchronous crypto. */
export function hmacSha256(secret: HmacKey, t: string, body: Uint8Array): Uint8Array {
  const crypto = getNodeCrypto();
  if (!crypto) throw nodeCryptoUnavailable();
  return crypto.createHmac('sha256', secret).update(`${t}.`).update(body).digest();
}

/** Constant-time equality of two byte arrays of the same length (false when lengths differ). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  const crypto = getNodeCrypto();
  if (crypto) return crypto.timingSafeEqual(a, b);
  // No early exit: the time taken must not depend on where the first difference is.
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

// Value of each ASCII hex digit (either case), -1 for every other code unit below 128.
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;
}

function hexDigit(code: number): number {
  return code < 128 ? (HEX_VALUE[code] as number) : -1;
}

/**
 * 32 bytes from 64 ASCII hex digits (either case), or undefined when the text is anything else.
 * Written into `out` when given (a caller's scratch buffer), else into a new array.
 */
export function hexToBytes32(hex: string, out: Uint8Array = new Uint8Array(32)): Uint8Array | undefined {
  // One table loop on every runtime. Not Buffer.from(hex, 'hex'): it keeps the low byte of any
  // code unit, so "š" (U+0161) decodes as "a" and a v1 that is not hex could match on Node alone.
  // No regex and no parseInt either: they cost as much as the rest of verify's own work at 1 KiB.
  // The v1 text is the sender's, not a secret, so decoding it need not be constant-time.
  if (hex.length !== 64) return undefined;
  for (let i = 0; i < 32; i++) {
    const high = hexDigit(hex.charCodeAt(2 * i));
    const low = hexDigit(hex.charCodeAt(2 * i + 1));
    if ((high | low) < 0) return undefined;
    out[i] = (high << 4) | low;
  }
  return out;
}

/** Lower-case hex of bytes. */
export function bytesToHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.byteLength; i++) out += (bytes[i] as number).toString(16).padStart(2, '0');
  return out;
}
