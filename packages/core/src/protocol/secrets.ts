import { describeType } from '../util/option-checks.js';

/**
 * Most secrets accepted at once: enough for a rotation (the new secret, the old one, and one more
 * while a rotation is undone or overlaps another). Each secret costs an HMAC of the whole body for
 * every request that does not match, forged ones included: 100 secrets made a forged 1 MiB request
 * cost 213 ms of CPU.
 */
export const MAX_SECRETS = 3;

/** Throws a TypeError unless `secret` is a usable signing secret. The message never shows it. */
export function assertSecret(secret: unknown, name: string): asserts secret is string {
  if (secret === undefined || secret === null) {
    throw new TypeError(
      `pixhook: ${name} is missing. Pass the endpoint's signing secret from the dashboard (Keys → Webhooks), e.g. process.env.SIGNING_SECRET, and check that the variable is set.`,
    );
  }
  if (typeof secret !== 'string') {
    throw new TypeError(
      `pixhook: ${name} must be a string, got ${typeof secret === 'object' ? describeType(secret) : `a ${typeof secret}`}.`,
    );
  }
  if (secret === '') throw new TypeError(`pixhook: ${name} is empty.`);
  if (secret.trim() !== secret) {
    throw new TypeError(
      `pixhook: ${name} has leading or trailing white space (a copied newline?); remove it, signatures would never match.`,
    );
  }
}

/**
 * The `secret` option as a list: one secret, or several while rotating (at most `MAX_SECRETS`),
 * each checked with `assertSecret`. Throws a TypeError or RangeError that never shows a secret.
 */
export function resolveSecrets(secret: string | readonly (string | undefined)[] | undefined): readonly string[] {
  const list = Array.isArray(secret) ? secret : [secret];
  if (list.length === 0) throw new TypeError('pixhook: secret is an empty array; give at least one secret.');
  if (list.length > MAX_SECRETS) {
    throw new RangeError(
      `pixhook: secret has ${list.length} entries; at most ${MAX_SECRETS} are accepted (the new and the old secret while rotating, and one more). Each one costs an HMAC of the whole body for every request that matches none, forged ones included: remove the secrets that are no longer used.`,
    );
  }
  for (const [i, one] of list.entries()) assertSecret(one, Array.isArray(secret) ? `secret[${i}]` : 'secret');
  return list as readonly string[];
}
