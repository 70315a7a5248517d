import { parseServerUrl, type ServerUrl, type ServerUrlKind } from './server-url.js';

/** Longest wait for Postgres to accept the connection and answer, in ms: a command fails, never hangs. */
export const POSTGRES_TIMEOUT_MS = 5_000;

/** A Postgres URL checked by {@link parsePostgresUrl}, and how to show it without its password. */
export type PostgresUrl = ServerUrl;

const POSTGRES: ServerUrlKind = {
  option: '--postgres (or DATABASE_URL)',
  protocols: ['postgres:', 'postgresql:'],
  shape: 'postgres://[user[:password]@]host[:port]/database',
  example: 'postgres://app@127.0.0.1:5432/app',
  defaultPort: '5432',
};

/**
 * Checks a `postgres://` or `postgresql://` URL; the error never quotes the value.
 *
 * @example
 * parsePostgresUrl('postgres://app:s3cret@db:5432/app').shown // 'postgres://app:***@db:5432/app'
 */
export function parsePostgresUrl(value: string): PostgresUrl {
  return parseServerUrl(value, POSTGRES);
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
