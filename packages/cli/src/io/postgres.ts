import { UsageError } from './errors.js';

/** Longest wait for Postgres to accept the connection and answer, in ms: a command fails, never hangs. */
export const POSTGRES_TIMEOUT_MS = 5_000;

/** A Postgres URL checked by {@link parsePostgresUrl}, and how to show it without its password. */
export interface PostgresUrl {
  /** The URL as given, to connect with: it may hold a password, so it is never printed. */
  readonly href: string;
  /** The URL to print: the password (and any query, which may hold one) replaced by `***`. */
  readonly shown: string;
  /** `host:port`, for messages. */
  readonly address: string;
  /** The password as given and as decoded, for scrubbing it from a driver's message. */
  readonly secrets: readonly string[];
}

/**
 * Checks a `postgres://` or `postgresql://` URL. The error never quotes the value: it may hold a
 * password (which is also why `--postgres` is checked here, not by commander, whose message
 * quotes the value).
 *
 * @example
 * parsePostgresUrl('postgres://app:s3cret@db:5432/app').shown // 'postgres://app:***@db:5432/app'
 */
export function parsePostgresUrl(value: string): PostgresUrl {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(
      '--postgres (or DATABASE_URL) is not a URL: expected postgres://[user[:password]@]host[:port]/database.',
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new UsageError(
      `--postgres (or DATABASE_URL) must be a postgres:// or postgresql:// URL, not ${url.protocol}//: e.g. postgres://app@127.0.0.1:5432/app.`,
    );
  }
  const credentials = url.password ? `${url.username}:***@` : url.username ? `${url.username}@` : '';
  const path = url.pathname === '/' ? '' : url.pathname;
  const query = url.search ? '?***' : '';
  const secrets = [url.password, safeDecode(url.password)];
  // A password may also come in the query (`?password=…`): scrub it as well.
  for (const [name, text] of url.searchParams) if (/pass/i.test(name)) secrets.push(text);
  return {
    href: value,
    shown: `${url.protocol}//${credentials}${url.host}${path}${query}`,
    address: `${url.hostname || 'localhost'}:${url.port || '5432'}`,
    secrets: [...new Set(secrets)].filter((secret) => secret.length > 0),
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Postgres did not answer within POSTGRES_TIMEOUT_MS. */
export class PostgresTimeoutError extends Error {
  override readonly name = 'PostgresTimeoutError';
  constructor() {
    super(`Postgres did not answer within ${POSTGRES_TIMEOUT_MS / 1000} s`);
  }
}

const UNREACHABLE = new Set(['ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** The error's code (`ECONNREFUSED`, a SQLSTATE), or its cause's when it wraps one (pixhook's explained errors do). */
export function errorCode(error: unknown): unknown {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  return code ?? cause?.code;
}

/** `text` with every one of `secrets` replaced by `***`, and any URL's password too. */
export function scrub(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) scrubbed = scrubbed.replaceAll(secret, '***');
  return scrubbed.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@');
}

/**
 * What went wrong with Postgres, in a sentence naming the URL (password masked) and what to check.
 * The driver's message is scrubbed of the password, in case it quoted it.
 */
export function describePostgresError(error: unknown, postgres: PostgresUrl): string {
  const code = errorCode(error);
  const detail = scrub(error instanceof Error ? error.message : String(error), postgres.secrets);
  const where = `Postgres at ${postgres.shown}`;
  const check = 'Check --postgres (or DATABASE_URL)';
  if (code === 'ECONNREFUSED') {
    return `Cannot reach ${where}: nothing accepts connections on ${postgres.address} (${detail}). Is Postgres running there (an SSH tunnel or kubectl port-forward open)? ${check}.`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return `Cannot reach ${where}: the host name does not resolve (${detail}). ${check}.`;
  }
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    return `Cannot reach ${where} (${detail}). ${check}, and any firewall or VPN in between.`;
  }
  if (code === '28P01' || code === '28000') {
    return `${where} refused the credentials (${detail}): check the user and password in the URL.`;
  }
  if (code === '3D000') return `${where}: ${detail}. ${check}: the database is the URL's path.`;
  if (error instanceof PostgresTimeoutError || /timeout|timed out/i.test(detail)) {
    const why = error instanceof PostgresTimeoutError ? '' : ` (${detail})`;
    return `${where} did not answer within ${POSTGRES_TIMEOUT_MS / 1000} s${why}. Is it overloaded, or is something other than Postgres listening on ${postgres.address}?`;
  }
  return `${where} failed: ${detail}`;
}
