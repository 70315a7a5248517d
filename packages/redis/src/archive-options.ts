import { assertKnownOptions, describeType } from '@pixhook/core';

/** Options of `RedisArchive`. */
export interface RedisArchiveOptions {
  /**
   * Starts every key, as a hash tag: `{<prefix>}:…`, so each of the archive's scripts touches one
   * slot. Apps (or endpoints) sharing one Redis need their own; the readers (CLI, dashboard) need
   * the app's. No `{` or `}` in it.
   * @default 'pixhook:inbox'
   * @example new RedisArchive(redis, { prefix: 'shop:inbox' })
   */
  prefix?: string;
  /**
   * How long an event is kept after its last entry, in ms: then pruned (and every key of the event
   * expires with it in Redis as a backstop).
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number;
  /**
   * Most events kept: Redis holds them in memory, so past it the oldest (by last entry) are pruned.
   * @default 100_000
   */
  maxEvents?: number;
  /**
   * Most bytes kept (bodies, headers and timelines as stored): past it the oldest events are pruned.
   * @default 268_435_456 (256 MiB)
   */
  maxBytes?: number;
  /**
   * How often an archive that writes (`record`, or attached to a `Webhooks`) prunes in the
   * background, in ms; `false`: never (call `prune()` yourself). A reader (CLI, dashboard) never
   * prunes unless asked, whatever its options.
   * @default 60_000
   */
  pruneIntervalMs?: number | false;
  /**
   * How often an attached archive looks for replay requests (`requestReplay`), in ms.
   * @default 1_000
   */
  replayPollMs?: number;
  /**
   * Longest wait for one Redis command, in ms: `record` (core answers anyway past it and reports
   * `ARCHIVE_FAILED`), and the reads, so a frozen Redis never hangs the CLI or the dashboard.
   * @default 2_000
   */
  writeTimeoutMs?: number;
  /**
   * Hears what fails in the background: a replay poll or a background prune (both are retried on
   * the next tick). Never given a secret.
   * @default none: such failures are silent
   */
  onError?: (error: Error) => void;
}

const OPTION_NAMES = [
  'prefix',
  'retentionMs',
  'maxEvents',
  'maxBytes',
  'pruneIntervalMs',
  'replayPollMs',
  'writeTimeoutMs',
  'onError',
] as const satisfies readonly (keyof RedisArchiveOptions)[];

/** The options with their defaults applied, checked. */
export interface ResolvedRedisArchiveOptions {
  prefix: string;
  retentionMs: number;
  maxEvents: number;
  maxBytes: number;
  pruneIntervalMs: number | false;
  replayPollMs: number;
  writeTimeoutMs: number;
  onError: ((error: Error) => void) | undefined;
}

export const DEFAULT_ARCHIVE_PREFIX = 'pixhook:inbox';
export const DEFAULT_ARCHIVE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
export const DEFAULT_ARCHIVE_MAX_EVENTS = 100_000;
export const DEFAULT_ARCHIVE_MAX_BYTES = 256 * 1024 * 1024;

function positiveInteger(value: unknown, fallback: number, name: string, unit: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(
      `pixhook: RedisArchive: ${name} must be a positive whole number${unit}, got ${describeType(value)}.`,
    );
  }
  return value;
}

/** Applies the defaults and throws a `TypeError` for an option that cannot work. */
export function resolveArchiveOptions(given: RedisArchiveOptions): ResolvedRedisArchiveOptions {
  if (typeof given !== 'object' || given === null) {
    throw new TypeError('pixhook: RedisArchive: options must be an object.');
  }
  assertKnownOptions(given, OPTION_NAMES, 'pixhook: RedisArchive: new RedisArchive(client, options)');
  const prefix = given.prefix ?? DEFAULT_ARCHIVE_PREFIX;
  if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) {
    throw new TypeError(
      `pixhook: RedisArchive: prefix must be a non-empty string without { or } (it is the keys' hash tag), got ${typeof prefix === 'string' ? JSON.stringify(prefix.slice(0, 60)) : describeType(prefix)}.`,
    );
  }
  const ms = ' of milliseconds';
  const pruneIntervalMs =
    given.pruneIntervalMs === false ? false : positiveInteger(given.pruneIntervalMs, 60_000, 'pruneIntervalMs', ms);
  if (given.onError !== undefined && typeof given.onError !== 'function') {
    throw new TypeError(`pixhook: RedisArchive: onError must be a function, got ${describeType(given.onError)}.`);
  }
  return {
    prefix,
    retentionMs: positiveInteger(given.retentionMs, DEFAULT_ARCHIVE_RETENTION_MS, 'retentionMs', ms),
    maxEvents: positiveInteger(given.maxEvents, DEFAULT_ARCHIVE_MAX_EVENTS, 'maxEvents', ''),
    maxBytes: positiveInteger(given.maxBytes, DEFAULT_ARCHIVE_MAX_BYTES, 'maxBytes', ''),
    pruneIntervalMs,
    replayPollMs: positiveInteger(given.replayPollMs, 1_000, 'replayPollMs', ms),
    writeTimeoutMs: positiveInteger(given.writeTimeoutMs, 2_000, 'writeTimeoutMs', ms),
    onError: given.onError,
  };
}
