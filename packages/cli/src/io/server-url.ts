import { UsageError } from './errors.js';

/** A server's URL checked by {@link parseServerUrl}, and how to show it without its password. */
export interface ServerUrl {
  /** The URL as given, to connect with: it may hold a password, so it is never printed. */
  readonly href: string;
  /** The URL to print: the password (and any query, which may hold one) replaced by `***`. */
  readonly shown: string;
  /** `host:port`, for messages. */
  readonly address: string;
  /** The password as given and as decoded (and any query parameter named like one), for scrubbing it from a driver's message. */
  readonly secrets: readonly string[];
}

/** What a kind of server's URL looks like, for {@link parseServerUrl} and its messages. */
export interface ServerUrlKind {
  /** Where the value came from, e.g. `--redis (or REDIS_URL)`. */
  readonly option: string;
  /** The schemes accepted, with their colon, e.g. `['redis:', 'rediss:']`. */
  readonly protocols: readonly string[];
  /** The URL's shape, for the message of a value that is not one. */
  readonly shape: string;
  /** An example URL of the first scheme. */
  readonly example: string;
  /** The port when the URL has none. */
  readonly defaultPort: string;
}

/**
 * Checks a server URL of `kind`. The error never quotes the value: it may hold a password (which
 * is also why such options are checked here, not by commander, whose message quotes the value).
 *
 * @example
 * parseServerUrl('redis://:s3cret@127.0.0.1:6380/2', REDIS).shown // 'redis://:***@127.0.0.1:6380/2'
 */
export function parseServerUrl(value: string, kind: ServerUrlKind): ServerUrl {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${kind.option} is not a URL: expected ${kind.shape}.`);
  }
  if (!kind.protocols.includes(url.protocol)) {
    const schemes = kind.protocols.map((protocol) => `${protocol}//`).join(' or ');
    throw new UsageError(`${kind.option} must be a ${schemes} URL, not ${url.protocol}//: e.g. ${kind.example}.`);
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
    address: `${url.hostname || 'localhost'}:${url.port || kind.defaultPort}`,
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
