import { createHash } from 'node:crypto';
import {
  type ArchiveEntry,
  type ArchiveMode,
  checkInboxQuery,
  describeType,
  type InboxEvent,
  type InboxOutcome,
  type InboxPage,
  type InboxQuery,
  type InboxReader,
  type InboxSummary,
  type InboxTimelineEntry,
  inboxCursor,
  type WebhookArchive,
} from '@pixhook/core';
import {
  type RedisArchiveOptions,
  type ResolvedRedisArchiveOptions,
  resolveArchiveOptions,
} from './archive-options.js';
import { GET, LIST, PRUNE, RECORD, REQUEST_REPLAY } from './archive-scripts.js';
import { type ClientKind, commandSender, type RedisClientLike, type SendCommand } from './client.js';
import { withTimeout } from './timeout.js';

/** Most members of a sorted set one `list` call examines before it returns a cursor to go on. */
const LIST_BUDGET = 5_000;
/** Events one prune script deletes before it lets other commands run. */
const PRUNE_BATCH = 1_000;
/** Replay requests taken per poll. */
const REPLAYS_PER_POLL = 20;
/** Ids per requestReplay script. */
const REPLAY_IDS_PER_CALL = 1_000;

const DELIVERY_RESULTS = new Set(['processed', 'duplicate', 'queued', 'in-flight', 'failed']);
const STEP_RESULTS = new Set(['processed', 'failed', 'dead-letter', 'queued']);
const MODES = new Set(['inline', 'transactional', 'queued']);
const OUTCOME_KEYS = ['processed', 'failed', 'queued', 'dead-letter'] as const;

interface Script {
  readonly source: string;
  readonly sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const SCRIPTS = {
  record: script(RECORD),
  get: script(GET),
  list: script(LIST),
  prune: script(PRUNE),
  requestReplay: script(REQUEST_REPLAY),
};

/**
 * An inbox on Redis: every verified delivery pixhook answered (its exact bytes, headers, verdict)
 * and what became of its event (handler runs, queue attempts, replays), kept for `retentionMs`
 * and bounded by `maxEvents` and `maxBytes` (Redis holds it in memory), for the CLI
 * (`pixhook inbox`) and the dashboard to list, show and replay. Pass a client you created (and,
 * for node-redis, connected); the archive never connects, closes or configures it.
 *
 * @example
 * import { Redis } from 'ioredis'
 * const webhooks = new Webhooks({ secret, archive: new RedisArchive(new Redis(process.env.REDIS_URL)) })
 */
export class RedisArchive implements WebhookArchive, InboxReader {
  /** Which library the client passed in comes from. */
  readonly clientKind: ClientKind;
  /** Longest wait for `record` (and every other command), in ms: core reads it. */
  readonly writeTimeoutMs: number;
  readonly #send: SendCommand;
  readonly #options: ResolvedRedisArchiveOptions;
  /** `{<prefix>}:`: every key starts with it. */
  readonly #base: string;
  /** The replay functions attached, the most recent last: it gets the requests. */
  readonly #replays: ((eventId: string) => Promise<unknown>)[] = [];
  #pollTimer: NodeJS.Timeout | undefined;
  #polling = false;
  #pruneTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(client: RedisClientLike, options: RedisArchiveOptions = {}) {
    const { kind, send } = commandSender(client, 'RedisArchive');
    this.clientKind = kind;
    this.#send = send;
    this.#options = resolveArchiveOptions(options);
    this.writeTimeoutMs = this.#options.writeTimeoutMs;
    this.#base = `{${this.#options.prefix}}:`;
  }

  /**
   * Writes one entry in one round trip (a Lua script): the event's summary and outcome
   * (`outcomeAfter`'s rule), its body and headers on its first delivery, the timeline entry. The
   * `transaction` argument is ignored: Redis does not join a Postgres transaction.
   */
  async record(entry: ArchiveEntry, _transaction?: unknown): Promise<void> {
    const checked = checkEntry(entry);
    const { eventId } = checked;
    const retention = String(this.#options.retentionMs);
    const outcomeKeys = OUTCOME_KEYS.map((outcome) => this.#key(`outcome:${outcome}`));
    let args: string[];
    if (checked.kind === 'delivery') {
      const { body, ...timeline } = checked;
      const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      const keys = [
        ...this.#eventKeys(eventId, checked.eventType),
        ...outcomeKeys,
        this.#key(`d:${checked.deliveryId}`),
        this.#key(`b:${eventId}`),
      ];
      args = [
        ...keys,
        eventId,
        'delivery',
        checked.result,
        String(checked.at),
        checked.eventType,
        JSON.stringify(timeline),
        retention,
        checked.created === undefined ? '' : String(checked.created),
        checked.mode,
        bytes.toString('base64'),
        JSON.stringify(checked.headers),
        String(bytes.byteLength),
      ];
    } else {
      const keys = [
        ...this.#eventKeys(eventId, checked.eventType),
        ...outcomeKeys,
        this.#key(`e:${eventId}`),
        this.#key(`b:${eventId}`),
      ];
      args = [
        ...keys,
        eventId,
        checked.kind,
        checked.result,
        String(checked.at),
        checked.eventType,
        JSON.stringify(checked),
        retention,
        '',
        '',
        '',
        '',
        '0',
      ];
    }
    // The entry's kind names it in errors: the event id is untrusted text.
    await this.#eval('record', checked.kind, SCRIPTS.record, 12, args);
    this.#startPruning();
  }

  /** One page of events, newest first (lastAt, then event id, descending), matching every filter given. */
  async list(query: InboxQuery = {}): Promise<InboxPage> {
    const q = checkInboxQuery(query, 'RedisArchive: list(query)');
    const { limit } = q;
    const cursor = q.after;
    let one = '';
    if (q.deliveryId !== undefined) one = `d${q.deliveryId}`;
    else if (q.eventId !== undefined) one = `e${q.eventId}`;
    const keys: string[] = [];
    if (q.type !== undefined) keys.push(this.#key(`type:${q.type}`));
    if (q.outcome !== undefined) keys.push(this.#key(`outcome:${q.outcome}`));
    if (keys.length === 0) keys.push(this.#key('all'));
    const reply = (await this.#eval('list', 'inbox', SCRIPTS.list, keys.length, [
      ...keys,
      this.#base,
      one,
      cursor === undefined ? '' : String(cursor.lastAt),
      cursor === undefined ? '' : cursor.eventId,
      q.since === undefined ? '' : String(q.since),
      q.until === undefined ? '' : String(q.until),
      q.type === undefined ? '' : `=${q.type}`,
      q.outcome === undefined ? '' : `=${q.outcome}`,
      String(limit + 1),
      String(LIST_BUDGET),
      q.deliveryId !== undefined && q.eventId !== undefined ? `=${q.eventId}` : '',
    ])) as [unknown[][], string?, string?];
    const items = reply[0].map(summaryOf);
    if (items.length > limit) {
      const last = items[limit - 1] as InboxSummary;
      return { items: items.slice(0, limit), next: inboxCursor(last.lastAt, last.eventId) };
    }
    const [, score, member] = reply;
    return { items, next: score == null || member == null ? undefined : inboxCursor(Number(score), member) };
  }

  /** The event in full (the body and headers of its first delivery, its timeline), or undefined. */
  async get(eventId: string): Promise<InboxEvent | undefined> {
    checkId(eventId, 'get(eventId)', 'the event id');
    const reply = (await this.#eval('get', 'event', SCRIPTS.get, 3, [
      this.#key(`e:${eventId}`),
      this.#key(`t:${eventId}`),
      this.#key(`b:${eventId}`),
    ])) as [(string | null)[], string[], string | null] | null;
    if (reply === null) return undefined;
    const [fields, timeline, stored] = reply;
    // `<headers JSON>\n<body base64>`, written when the event is created; a missing or mangled one
    // (deleted by hand) fails the headers' JSON check below.
    const text = String(stored);
    const newline = text.indexOf('\n');
    return {
      ...summaryOf([eventId, ...fields]),
      body: new Uint8Array(Buffer.from(text.slice(newline + 1), 'base64')),
      headers: parseJson(text.slice(0, newline), 'headers') as Record<string, string>,
      // Oldest first: ordered on `at`, then as written (the sort is stable). A queue worker may
      // write its job's step before the delivery that queued it.
      timeline: timeline
        .map((text, index) => parseJson(text, `timeline entry ${index}`) as InboxTimelineEntry)
        .sort((a, b) => a.at - b.at),
    };
  }

  /** Asks an attached `Webhooks` to run these events again; ids not kept are skipped. Resolves with how many were requested. */
  async requestReplay(eventIds: readonly string[]): Promise<number> {
    if (!Array.isArray(eventIds)) {
      throw new TypeError(
        `pixhook: RedisArchive: requestReplay(eventIds) takes an array of event ids, got ${describeType(eventIds)}.`,
      );
    }
    for (const id of eventIds) checkId(id, 'requestReplay(eventIds)', 'each event id');
    let count = 0;
    for (let start = 0; start < eventIds.length; start += REPLAY_IDS_PER_CALL) {
      const ids = eventIds.slice(start, start + REPLAY_IDS_PER_CALL);
      const keys = [this.#key('replays'), ...ids.map((id) => this.#key(`e:${id}`))];
      count += Number(
        await this.#eval('requestReplay', `${ids.length} events`, SCRIPTS.requestReplay, keys.length, [
          ...keys,
          ...ids,
        ]),
      );
    }
    return count;
  }

  /**
   * From now on hands replay requests to `replay`, one after another, polling every
   * `replayPollMs`; each request goes to one process. Returns a function that detaches.
   */
  attach(replay: (eventId: string) => Promise<unknown>): () => void {
    if (typeof replay !== 'function') {
      throw new TypeError(`pixhook: RedisArchive: attach(replay) takes a function, got ${describeType(replay)}.`);
    }
    this.#replays.push(replay);
    this.#schedulePoll();
    this.#startPruning();
    return () => {
      const index = this.#replays.lastIndexOf(replay);
      if (index >= 0) this.#replays.splice(index, 1);
      if (this.#replays.length === 0) this.#stopPolling();
    };
  }

  /** Deletes what is past the retention, then the oldest beyond maxEvents or maxBytes; resolves with how many events. */
  async prune(): Promise<number> {
    const { retentionMs, maxEvents, maxBytes } = this.#options;
    let total = 0;
    for (;;) {
      const removed = Number(
        await this.#eval('prune', 'inbox', SCRIPTS.prune, 3, [
          this.#key('all'),
          this.#key('idx'),
          this.#key('bytes'),
          this.#base,
          String(Date.now() - retentionMs),
          String(maxEvents),
          String(maxBytes),
          String(PRUNE_BATCH),
        ]),
      );
      total += removed;
      if (removed < PRUNE_BATCH) return total;
    }
  }

  /** Stops polling for replays and pruning in the background. The client stays open: it is the app's. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#replays.length = 0;
    this.#stopPolling();
    clearTimeout(this.#pruneTimer);
    this.#pruneTimer = undefined;
  }

  #key(suffix: string): string {
    return this.#base + suffix;
  }

  /** e, t, all, type, idx, bytes: the first six keys of the record script. */
  #eventKeys(eventId: string, eventType: string): string[] {
    return [
      this.#key(`e:${eventId}`),
      this.#key(`t:${eventId}`),
      this.#key('all'),
      this.#key(`type:${eventType}`),
      this.#key('idx'),
      this.#key('bytes'),
    ];
  }

  /** Schedules the next background prune, the first once the archive writes: one at a time, the next after it ends. */
  #startPruning(): void {
    const interval = this.#options.pruneIntervalMs;
    if (interval === false || this.#pruneTimer !== undefined || this.#closed) return;
    this.#pruneTimer = setTimeout(() => void this.#backgroundPrune(), interval).unref();
  }

  async #backgroundPrune(): Promise<void> {
    try {
      await this.prune();
    } catch (error) {
      this.#report(error as Error);
    } finally {
      this.#pruneTimer = undefined;
      this.#startPruning();
    }
  }

  #schedulePoll(): void {
    if (this.#pollTimer !== undefined || this.#closed) return;
    this.#pollTimer = setTimeout(() => void this.#poll(), this.#options.replayPollMs).unref();
  }

  #stopPolling(): void {
    clearTimeout(this.#pollTimer);
    this.#pollTimer = undefined;
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const taken = (await this.#run('poll', 'replays', ['LPOP', this.#key('replays'), String(REPLAYS_PER_POLL)])) as
        | string[]
        | null;
      const ids = taken ?? [];
      for (const [index, eventId] of ids.entries()) {
        const replay = this.#replays.at(-1);
        if (replay === undefined) {
          // Detached (or closed) while this batch ran: the rest go back, first in line, for another process.
          await this.#run('poll', 'replays', ['LPUSH', this.#key('replays'), ...ids.slice(index).reverse()]);
          break;
        }
        try {
          await replay(eventId);
        } catch {
          // core reports the replay's failure itself.
        }
      }
    } catch (error) {
      this.#report(error as Error);
    } finally {
      this.#polling = false;
      // A poll scheduled while this one ran (detached and attached again) would make a second chain.
      clearTimeout(this.#pollTimer);
      this.#pollTimer = undefined;
      if (this.#replays.length > 0) this.#schedulePoll();
    }
  }

  /** Tells `onError` (every error here comes from `#run`: an `Error` whose message starts `pixhook: `). */
  #report(error: Error): void {
    try {
      this.#options.onError?.(error);
    } catch {
      // A listener that throws must not stop the polls or the pruning.
    }
  }

  /** Runs a script by its SHA1 (EVALSHA), loading it with EVAL when Redis does not know it yet. */
  async #eval(operation: string, subject: string, which: Script, keyCount: number, args: string[]): Promise<unknown> {
    try {
      return await this.#run(operation, subject, ['EVALSHA', which.sha, String(keyCount), ...args]);
    } catch (error) {
      if (!(error instanceof Error && /\bNOSCRIPT\b/.test(error.message))) throw error;
      return this.#run(operation, subject, ['EVAL', which.source, String(keyCount), ...args]);
    }
  }

  /** Sends one command and waits for at most `writeTimeoutMs`, with errors named after the operation. */
  async #run(operation: string, subject: string, args: string[]): Promise<unknown> {
    const { writeTimeoutMs } = this.#options;
    // A client that throws instead of rejecting rejects here all the same.
    const sent = (async () => this.#send(args))();
    try {
      return await withTimeout(
        sent,
        writeTimeoutMs,
        `pixhook: RedisArchive: Redis did not answer ${operation}(${subject}) within ${writeTimeoutMs} ms; is it reachable?`,
      );
    } catch (cause) {
      if (cause instanceof Error && cause.message.startsWith('pixhook: RedisArchive:')) throw cause;
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new Error(`pixhook: RedisArchive: ${operation}(${subject}) failed: ${message}`, { cause });
    }
  }
}

function checkId(value: unknown, where: string, what: string): asserts value is string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(
      `pixhook: RedisArchive: ${where}: ${what} must be a non-empty string, got ${describeType(value)}.`,
    );
  }
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The entry, checked before anything reaches Redis (a wrong one would break the script midway). */
function checkEntry(entry: ArchiveEntry): ArchiveEntry {
  const where = 'record(entry)';
  if (typeof entry !== 'object' || entry === null) {
    throw new TypeError(`pixhook: RedisArchive: ${where} takes an archive entry, got ${describeType(entry)}.`);
  }
  checkId(entry.eventId, where, 'eventId');
  if (typeof entry.eventType !== 'string') {
    throw new TypeError(
      `pixhook: RedisArchive: ${where}: eventType must be a string, got ${describeType(entry.eventType)}.`,
    );
  }
  if (!isTime(entry.at)) {
    throw new TypeError(
      `pixhook: RedisArchive: ${where}: at must be a time in ms since the epoch, got ${describeType(entry.at)}.`,
    );
  }
  const results =
    entry.kind === 'delivery'
      ? DELIVERY_RESULTS
      : entry.kind === 'job' || entry.kind === 'replay'
        ? STEP_RESULTS
        : undefined;
  if (results === undefined) {
    throw new TypeError(
      `pixhook: RedisArchive: ${where}: kind must be 'delivery', 'job' or 'replay', got ${describeType((entry as { kind?: unknown }).kind)}.`,
    );
  }
  if (!results.has(entry.result as string)) {
    throw new TypeError(
      `pixhook: RedisArchive: ${where}: a ${entry.kind} entry has no result ${describeType(entry.result)}.`,
    );
  }
  if (entry.kind === 'delivery') {
    if (!(entry.body instanceof Uint8Array)) {
      throw new TypeError(
        `pixhook: RedisArchive: ${where}: body must be a Uint8Array, got ${describeType(entry.body)}.`,
      );
    }
    if (typeof entry.headers !== 'object' || entry.headers === null) {
      throw new TypeError(
        `pixhook: RedisArchive: ${where}: headers must be an object, got ${describeType(entry.headers)}.`,
      );
    }
    checkId(entry.deliveryId, where, 'deliveryId');
    if (!MODES.has(entry.mode)) {
      throw new TypeError(
        `pixhook: RedisArchive: ${where}: mode must be 'inline', 'transactional' or 'queued', got ${describeType(entry.mode)}.`,
      );
    }
  }
  return entry;
}

/** [id, type, created, firstAt, lastAt, outcome, deliveries, bytes, mode], as the scripts return them. */
function summaryOf(item: unknown[]): InboxSummary {
  const [eventId, eventType, created, firstAt, lastAt, outcome, deliveries, bytes, mode] = item as string[];
  return {
    eventId: eventId as string,
    eventType: eventType as string,
    created: created === '' || created == null ? undefined : Number(created),
    firstAt: Number(firstAt),
    lastAt: Number(lastAt),
    outcome: outcome as InboxOutcome,
    deliveries: Number(deliveries),
    bytes: Number(bytes),
    mode: mode as ArchiveMode,
  };
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(
      `pixhook: RedisArchive: get(event): its ${what} is not JSON: was the key written by something else?`,
    );
  }
}
