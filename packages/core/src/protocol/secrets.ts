import { describeType } from '../util/option-checks.js';

/**
 * Most secrets accepted at once, per `Webhooks` or per tenant's lookup, expired ones included:
 * enough for a rotation (the new secret, the old one, and one more while a rotation is undone or
 * overlaps another). Each secret costs an HMAC of the whole body for every request that does not
 * match, forged ones included: 100 secrets made a forged 1 MiB request cost 213 ms of CPU.
 */
export const MAX_SECRETS = 3;

/**
 * One signing secret with what pixhook may say about it: its `label` (told to handlers and
 * `onError` as `context.secret.label`, never the secret) and when it stops verifying (`notAfter`).
 * @example { secret: process.env.OLD_SECRET, label: '2026-05', notAfter: '2026-12-01T00:00:00Z' }
 */
export interface SecretEntry {
  /** The signing secret: non-empty, without leading or trailing white space. */
  readonly secret: string | undefined;
  /** A name for logs and handlers (at most 64 characters); never the secret itself. @default none: the index only */
  readonly label?: string;
  /**
   * From this instant on (the `now` option's clock) the secret no longer verifies: a rotation that
   * ends on its own. A Date, milliseconds since the epoch, or an ISO 8601 string.
   * @default none: it verifies until removed
   */
  readonly notAfter?: Date | number | string;
}

/** One secret, or several while rotating: strings, `SecretEntry`s, or both. */
export type SecretSpec = string | SecretEntry | readonly (string | SecretEntry | undefined)[];

/**
 * A secret per tenant: called with the tenant (a path parameter, by default, see each adapter's
 * `tenant` option) and answers its secret or secrets, or `undefined`/`null`/`[]` when there is no
 * such tenant. May be async. Results are cached (`secretCache`).
 */
export type SecretLookup = (
  tenant: string,
) => SecretSpec | null | undefined | PromiseLike<SecretSpec | null | undefined>;

/** Which secret verified a delivery: its place in the list, and its label when it has one. */
export interface SecretMatch {
  /** 0 for the first secret of the list (of the option, or of the tenant's lookup). */
  readonly index: number;
  /** The secret's `label`, when it was given one. */
  readonly label?: string;
}

/** One secret, checked: its text, and what may be said about it. */
export interface ResolvedSecret {
  readonly secret: string;
  readonly match: SecretMatch;
  /** Ms since the epoch from which it no longer verifies; undefined: never. */
  readonly notAfter: number | undefined;
}

/** A checked list of secrets, as verification uses it. */
export interface SecretSet {
  readonly list: readonly ResolvedSecret[];
  /** The secrets' texts, in order (HMAC keys are made once per array, see `hmacKeys`). */
  readonly secrets: readonly string[];
  /** True when at least one has a `notAfter`. */
  readonly expires: boolean;
}

/** A set with no secret: a tenant without one. Nothing verifies against it. */
export const NO_SECRETS: SecretSet = Object.freeze({ list: [], secrets: [], expires: false });

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

const ENTRY_KEYS = new Set(['secret', 'label', 'notAfter']);

/** Below this many milliseconds (1970-04-26), a `notAfter` number is seconds given by mistake. */
const SECONDS_LOOK = 10_000_000_000;

/** `notAfter` as ms since the epoch; throws a TypeError for anything that is not a date. */
function instant(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms =
    value instanceof Date
      ? value.getTime()
      : typeof value === 'number'
        ? value
        : typeof value === 'string'
          ? Date.parse(value)
          : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new TypeError(
      `pixhook: ${name}.notAfter must be a Date, milliseconds since the epoch, or an ISO 8601 date; got ${describeType(value)}.`,
    );
  }
  // Seconds since the epoch (a Unix timestamp) read as milliseconds would be a date in 1970: the
  // secret would never verify. Refused: a number must be milliseconds.
  if (typeof value === 'number' && ms < SECONDS_LOOK) {
    throw new TypeError(
      `pixhook: ${name}.notAfter ${ms} is in 1970 as milliseconds: it looks like seconds since the epoch; give milliseconds (seconds × 1000), a Date or an ISO 8601 date.`,
    );
  }
  return ms;
}

/** One entry of a secret list, checked. */
function resolveOne(one: unknown, index: number, name: string): ResolvedSecret {
  if (typeof one !== 'object' || one === null) {
    assertSecret(one, name);
    return { secret: one, match: Object.freeze({ index }), notAfter: undefined };
  }
  for (const key of Object.keys(one)) {
    if (!ENTRY_KEYS.has(key)) {
      throw new TypeError(
        `pixhook: ${name} has an unknown field ${JSON.stringify(key.slice(0, 40))}; a secret entry has secret, label and notAfter.`,
      );
    }
  }
  const { secret, label, notAfter } = one as SecretEntry;
  assertSecret(secret, `${name}.secret`);
  if (label !== undefined && (typeof label !== 'string' || label === '' || label.length > 64)) {
    throw new TypeError(
      `pixhook: ${name}.label must be a non-empty string of at most 64 characters; got ${describeType(label)}.`,
    );
  }
  if (label !== undefined && label === secret) {
    throw new TypeError(
      `pixhook: ${name}.label is the secret itself; a label is told to handlers and logs, so give it a name.`,
    );
  }
  const match: SecretMatch = Object.freeze(label === undefined ? { index } : { index, label });
  return { secret, match, notAfter: instant(notAfter, name) };
}

/**
 * The `secret` option (or what a tenant's lookup answered) as a checked `SecretSet`: one secret or
 * several while rotating (at most `MAX_SECRETS`), strings or entries. Throws a TypeError or
 * RangeError that never shows a secret. `name` names the value in messages.
 */
export function resolveSecrets(secret: unknown, name = 'secret'): SecretSet {
  const many = Array.isArray(secret);
  const list: readonly unknown[] = many ? secret : [secret];
  if (list.length === 0) throw new TypeError(`pixhook: ${name} is an empty array; give at least one secret.`);
  if (list.length > MAX_SECRETS) {
    throw new RangeError(
      `pixhook: ${name} has ${list.length} entries; at most ${MAX_SECRETS} are accepted (the new and the old secret while rotating, and one more). Each one costs an HMAC of the whole body for every request that matches none, forged ones included: remove the secrets that are no longer used.`,
    );
  }
  const resolved = list.map((one, i) => resolveOne(one, i, many ? `${name}[${i}]` : name));
  return {
    list: resolved,
    secrets: resolved.map((one) => one.secret),
    expires: resolved.some((one) => one.notAfter !== undefined),
  };
}
