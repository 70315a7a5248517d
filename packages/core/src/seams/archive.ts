// The archive seam: what an inbox store implements (WebhookArchive: written by core; InboxReader:
// read by the CLI and the dashboard), and the shapes it keeps. The Postgres and Redis archives are
// `PostgresArchive` (@pixhook/postgres) and `RedisArchive` (@pixhook/redis).
import { assertKnownOptions, describeType } from '../util/option-checks.js';

/** The mode of the `Webhooks` that archived a delivery. */
export type ArchiveMode = 'inline' | 'transactional' | 'queued';

/**
 * Where an event stands, as the inbox lists it: `processed` (its handlers succeeded once),
 * `failed` (the last run failed: the service or the queue retries it), `queued` (waiting for a
 * worker), `dead-letter` (the queue ran out of attempts).
 */
export type InboxOutcome = 'processed' | 'failed' | 'queued' | 'dead-letter';

/** The inbox's outcomes, for checking a filter. */
export const INBOX_OUTCOMES: readonly InboxOutcome[] = ['processed', 'failed', 'queued', 'dead-letter'];

/** One handler's run, in a delivery, a job or a replay. */
export interface ArchivedRun {
  /** The handler's name (`handler.name`), else `#<index>` in registration order. */
  readonly handler: string;
  /** How long it ran, in milliseconds. */
  readonly ms: number;
  /** False when it threw or rejected. */
  readonly ok: boolean;
  /** Its error's class and message (first 500 characters), when it failed. Untrusted text. */
  readonly error?: string;
}

/**
 * One verified delivery, as core hands it to the archive once it knows its answer. Unsigned or
 * rejected-before-verification requests are never archived.
 */
export interface ArchivedDelivery {
  readonly kind: 'delivery';
  readonly eventId: string;
  readonly eventType: string;
  /** The event's signed `created`, when it is a number. */
  readonly created: number | undefined;
  /** The X-Service-Delivery header (not signed). */
  readonly deliveryId: string;
  /** The signature's `t`, in Unix seconds. */
  readonly timestamp: number;
  /**
   * When it arrived (the call of `handle()`), in ms since the epoch on the `now` option's clock:
   * before anything it caused, so a timeline ordered on `at` reads in order even when a queue
   * worker wrote its job's step before the 202 was sent.
   */
  readonly at: number;
  /** The exact bytes received: they were verified, so a replay parses them again without re-signing. */
  readonly body: Uint8Array;
  /** The request's headers as received, names lower-cased, repeated ones joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** Which of the secrets matched (0: the first). */
  readonly secretIndex: number;
  readonly mode: ArchiveMode;
  /** The status answered. */
  readonly status: number;
  /**
   * What this delivery did: `processed` (handlers ran and succeeded, or there were none),
   * `duplicate` (done before: not run), `queued` (written to the queue), `in-flight` (409: running
   * elsewhere), `failed` (any other refusal: a handler failed, a store or queue was down, a timeout).
   */
  readonly result: 'processed' | 'duplicate' | 'queued' | 'in-flight' | 'failed';
  /** The error code answered, for `in-flight` and `failed`. */
  readonly code?: string;
  /** From the call of `handle()` to the answer, in ms. */
  readonly ms: number;
  /** The handlers that ran in the request (inline and transactional modes). */
  readonly runs: readonly ArchivedRun[];
}

/** Something that happened to an event after its delivery: a queue job's attempt, or a replay. */
export interface ArchivedStep {
  readonly kind: 'job' | 'replay';
  readonly eventId: string;
  readonly eventType: string;
  /** When it ended, in ms since the epoch. */
  readonly at: number;
  /**
   * `processed` (its handlers succeeded), `failed` (one failed: retried later), `dead-letter` (a
   * job that failed its last attempt), `queued` (a replay in queued mode: written as a new job).
   */
  readonly result: 'processed' | 'failed' | 'dead-letter' | 'queued';
  /** Queue jobs (and replays written as one): the engine's job id. */
  readonly jobId?: string;
  /** Queue jobs: 1 for the first run. */
  readonly attempt?: number;
  readonly maxAttempts?: number;
  /** How long it ran, in ms. */
  readonly ms: number;
  readonly runs: readonly ArchivedRun[];
  /** Why it failed, when it did (the error's class and message, first 500 characters). Untrusted text. */
  readonly error?: string;
}

/** What core writes to an archive. */
export type ArchiveEntry = ArchivedDelivery | ArchivedStep;

/**
 * The event's outcome after `entry`, given its outcome before (undefined: a new event): the rule
 * every archive applies, so that the inbox lists the same thing on Postgres and on Redis.
 * A duplicate or a 409 changes nothing; a redelivery answered 202 changes nothing for an event
 * the archive already has (the queue did not make a second job); everything else sets it.
 */
export function outcomeAfter(before: InboxOutcome | undefined, entry: ArchiveEntry): InboxOutcome | undefined {
  const { result } = entry;
  if (result === 'duplicate' || result === 'in-flight')
    return before ?? (result === 'duplicate' ? 'processed' : 'failed');
  if (result === 'queued' && entry.kind === 'delivery' && before !== undefined) return before;
  return result;
}

/**
 * Where verified deliveries and what became of them are kept (the `archive` option of
 * `new Webhooks()`): `PostgresArchive` from `@pixhook/postgres`, `RedisArchive` from `@pixhook/redis`.
 * Core writes to it; the CLI and the dashboard read it through `InboxReader`.
 */
export interface WebhookArchive {
  /**
   * Writes one entry: a delivery's bytes and headers (the event's body is kept once, from its
   * first delivery; each delivery's headers are kept with its entry), the entry in the event's
   * timeline, and the event's outcome (`outcomeAfter`). With `transaction` (transactional mode, the
   * event's open transaction, e.g. a `pg` `PoolClient`), writes through it so that the entry
   * commits with the event, and must never make that transaction fail (a savepoint). Rejecting is
   * reported to `onError` as `ARCHIVE_FAILED`; the delivery's answer does not change.
   */
  record(entry: ArchiveEntry, transaction?: unknown): Promise<void>;
  /**
   * Optional. Longest wait for `record`, in ms, before core answers anyway and reports
   * `ARCHIVE_FAILED` (the write may still land). @default 2000 in core
   */
  readonly writeTimeoutMs?: number;
  /**
   * Optional. Called by `new Webhooks({ archive })`: from then on the archive hands replay requests
   * (written by `requestReplay`, from the CLI or the dashboard) to `replay`, each to one process.
   * Returns a function that detaches.
   */
  attach?(replay: (eventId: string) => Promise<unknown>): () => void;
}

/** Which archived events to list. Every field is optional; all given ones must match. */
export interface InboxQuery {
  /** Event type, exact. */
  type?: string;
  outcome?: InboxOutcome;
  /** Events last seen at or after this time, ms since the epoch. */
  since?: number;
  /** Events last seen before this time, ms since the epoch. */
  until?: number;
  /** One event, by its id. */
  eventId?: string;
  /** The event one of whose deliveries had this X-Service-Delivery id. */
  deliveryId?: string;
  /** Most events per page, 1 to 500. @default 50 */
  limit?: number;
  /** Where the page starts: the previous page's `next`. @default the newest */
  cursor?: string;
}

/** One event as the inbox lists it. */
export interface InboxSummary {
  readonly eventId: string;
  readonly eventType: string;
  readonly created: number | undefined;
  /** When its first delivery was answered, ms since the epoch. */
  readonly firstAt: number;
  /** When its last entry was written, ms since the epoch: the list is ordered on it, newest first. */
  readonly lastAt: number;
  readonly outcome: InboxOutcome;
  /** Verified deliveries archived. */
  readonly deliveries: number;
  /** The body's size in bytes. */
  readonly bytes: number;
  readonly mode: ArchiveMode;
}

/** One page of the inbox, newest first. */
export interface InboxPage {
  readonly items: readonly InboxSummary[];
  /** The cursor of the next page; undefined on the last. */
  readonly next: string | undefined;
}

/** One entry of an event's timeline, as read back: a delivery's body is the event's. */
export type InboxTimelineEntry = Omit<ArchivedDelivery, 'body'> | ArchivedStep;

/** One archived event in full. Every string in it was read from storage: treat it as untrusted text where you show it. */
export interface InboxEvent extends InboxSummary {
  /** The exact bytes of its first delivery. */
  readonly body: Uint8Array;
  /** Its first delivery's headers. */
  readonly headers: Readonly<Record<string, string>>;
  /** Everything that happened to it, oldest first: ordered on `at`, then as written. */
  readonly timeline: readonly InboxTimelineEntry[];
}

/** What the CLI and the dashboard use of an archive. */
export interface InboxReader {
  list(query?: InboxQuery): Promise<InboxPage>;
  get(eventId: string): Promise<InboxEvent | undefined>;
  /**
   * Asks the app to run these archived events' handlers again: each request is taken by one
   * `Webhooks` attached to the archive, within the archive's poll interval. Resolves with how many
   * were requested (ids not in the archive are skipped).
   */
  requestReplay(eventIds: readonly string[]): Promise<number>;
  /** Deletes what is past the retention or beyond the size cap now; resolves with how many events. */
  prune(): Promise<number>;
  close(): Promise<void>;
}

/** True when `value` has a `record` method (a `WebhookArchive`). */
export function isWebhookArchive(value: unknown): value is WebhookArchive {
  return typeof value === 'object' && value !== null && typeof (value as WebhookArchive).record === 'function';
}

/** An `InboxQuery` checked, with its default limit and its cursor read. */
export interface CheckedInboxQuery {
  readonly type: string | undefined;
  readonly outcome: InboxOutcome | undefined;
  readonly since: number | undefined;
  readonly until: number | undefined;
  readonly eventId: string | undefined;
  readonly deliveryId: string | undefined;
  readonly limit: number;
  /** Where the page starts: items strictly after this (lastAt, eventId) in the list's order. */
  readonly after: { readonly lastAt: number; readonly eventId: string } | undefined;
}

/** The largest page. */
export const MAX_INBOX_PAGE = 500;

function optionalString(query: Record<string, unknown>, name: string, where: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > 1000) {
    throw new TypeError(
      `pixhook: ${where}: ${name} must be a non-empty string of at most 1000 characters, got ${describeType(value)}.`,
    );
  }
  return value;
}

function optionalTime(query: Record<string, unknown>, name: string, where: string): number | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`pixhook: ${where}: ${name} must be a time in ms since the epoch, got ${describeType(value)}.`);
  }
  return value;
}

/** The cursor of the page that starts after the event at (`lastAt`, `eventId`). */
export function inboxCursor(lastAt: number, eventId: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(JSON.stringify([lastAt, eventId]))) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function readCursor(cursor: unknown, where: string): CheckedInboxQuery['after'] {
  if (cursor === undefined) return undefined;
  const bad = () =>
    new TypeError(`pixhook: ${where}: cursor is not one this inbox gave: pass the previous page's next as it is.`);
  if (typeof cursor !== 'string' || cursor.length > 3000 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let value: unknown;
  try {
    const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw bad();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !Number.isSafeInteger(value[0]) ||
    (value[0] as number) < 0 ||
    typeof value[1] !== 'string'
  ) {
    throw bad();
  }
  return { lastAt: value[0] as number, eventId: value[1] as string };
}

const QUERY_NAMES = ['type', 'outcome', 'since', 'until', 'eventId', 'deliveryId', 'limit', 'cursor'] as const;

/**
 * Checks an `InboxQuery` (a `pixhook: ` TypeError naming `where` for anything wrong in it, an
 * unknown field included) and fills in its defaults. Every archive reads its queries with it.
 */
export function checkInboxQuery(query: InboxQuery | undefined, where = 'inbox query'): CheckedInboxQuery {
  if (query !== undefined && (typeof query !== 'object' || query === null || Array.isArray(query))) {
    throw new TypeError(`pixhook: ${where}: the query must be an object, got ${describeType(query)}.`);
  }
  const given = (query ?? {}) as Record<string, unknown>;
  assertKnownOptions(given, QUERY_NAMES, `pixhook: ${where}`);
  const outcome = given.outcome;
  if (outcome !== undefined && !INBOX_OUTCOMES.includes(outcome as InboxOutcome)) {
    throw new TypeError(
      `pixhook: ${where}: outcome must be one of ${INBOX_OUTCOMES.join(', ')}, got ${describeType(outcome)}.`,
    );
  }
  const limit = given.limit ?? 50;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_INBOX_PAGE) {
    throw new TypeError(
      `pixhook: ${where}: limit must be a whole number from 1 to ${MAX_INBOX_PAGE}, got ${describeType(limit)}.`,
    );
  }
  return {
    type: optionalString(given, 'type', where),
    outcome: outcome as InboxOutcome | undefined,
    since: optionalTime(given, 'since', where),
    until: optionalTime(given, 'until', where),
    eventId: optionalString(given, 'eventId', where),
    deliveryId: optionalString(given, 'deliveryId', where),
    limit,
    after: readCursor(given.cursor, where),
  };
}
