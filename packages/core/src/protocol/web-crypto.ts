/**
 * HMAC-SHA256 on Web Crypto (`crypto.subtle`), for runtimes without `node:crypto`: Cloudflare
 * Workers without Node compatibility, browsers. Asynchronous, as `crypto.subtle` is. Nothing here
 * may import a `node:` module.
 */

const encoder = new TextEncoder();
// Imported keys, by secret: importKey costs about as much as one HMAC, and secrets rarely change.
const keys = new Map<string, Promise<CryptoKey>>();
// Bounds the cache when callers pass ever-new secrets (tests, sign-many tools).
const MAX_KEYS = 64;

function subtle(): SubtleCrypto {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleCrypto } }).crypto?.subtle;
  if (!subtle) {
    throw new Error(
      'pixhook: this runtime has neither node:crypto nor Web Crypto (crypto.subtle), so signatures cannot be verified. Browsers expose crypto.subtle only on secure (https) pages.',
    );
  }
  return subtle;
}

function importKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (key === undefined) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = subtle().importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    keys.set(secret, key);
    const pending = key;
    // A failed import must not be served from the cache forever.
    pending.catch(() => {
      if (keys.get(secret) === pending) keys.delete(secret);
    });
  }
  return key;
}

/**
 * HMAC-SHA256 of `t.` followed by the body's bytes, keyed with `secret` (UTF-8, as `node:crypto`
 * takes a string key), on Web Crypto. Same bytes as `hmacSha256` in crypto.ts.
 */
export async function hmacSha256Web(secret: string, t: string, body: Uint8Array): Promise<Uint8Array> {
  const key = await importKey(secret);
  // crypto.subtle has no incremental update: sign one buffer holding "t." and the body.
  const prefix = encoder.encode(`${t}.`);
  const data = new Uint8Array(prefix.byteLength + body.byteLength);
  data.set(prefix, 0);
  data.set(body, prefix.byteLength);
  return new Uint8Array(await subtle().sign('HMAC', key, data));
}
