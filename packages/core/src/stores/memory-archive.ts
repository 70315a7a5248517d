import {
  type ArchiveEntry,
  type ArchiveMode,
  checkInboxQuery,
  type InboxEvent,
  type InboxOutcome,
  type InboxPage,
  type InboxQuery,
  type InboxReader,
  type InboxSummary,
  type InboxTimelineEntry,
  inboxCursor,
  outcomeAfter,
  type WebhookArchive,
} from '../seams/archive.js';
import { assertKnownOptions, describeType } from '../util/option-checks.js';

/** Options of `MemoryArchive`. */
export interface MemoryArchiveOptions {
  /** Most events kept; past it the least recently seen are forgotten. @default 10_000 */
  maxEvents?: number;
  /** How long an event is kept after its last entry, in ms. @default 604_800_000 (7 days) */
  retentionMs?: number;
  /** The clock, in ms; inject one in tests. @default Date.now */
  now?: () => number;
}

interface Kept {
  eventId: string;
  eventType: string;
  created: number | undefined;
  firstAt: number;
  lastAt: number;
  outcome: InboxOutcome;
  deliveries: number;
  mode: ArchiveMode;
  body: Uint8Array;
  headers: Readonly<Record<string, string>>;
  timeline: InboxTimelineEntry[];
}

const OPTION_NAMES = ['maxEvents', 'retentionMs', 'now'] as const;

/**
 * An archive in this process's memory, for development, tests and the demo: what `PostgresArchive`
 * and `RedisArchive` keep, lost when the process ends and bounded by `maxEvents`. Replay requests
 * (`requestReplay`) run at once in the `Webhooks` attached to it.
 *
 * @example
 * const archive = new MemoryArchive()
 * const webhooks = new Webhooks({ secret, archive })
 * await startDashboard({ inbox: archive })
 */
export class MemoryArchive implements WebhookArchive, InboxReader {
  readonly #events = new Map<string, Kept>();
  readonly #maxEvents: number;
  readonly #retentionMs: number;
  readonly #now: () => number;
  #replay: ((eventId: string) => Promise<unknown>) | undefined;

  constructor(options: MemoryArchiveOptions = {}) {
    assertKnownOptions(options, OPTION_NAMES, 'pixhook: new MemoryArchive(options)');
    const { maxEvents = 10_000, retentionMs = 7 * 24 * 60 * 60 * 1000, now = Date.now } = options;
    if (!Number.isSafeInteger(maxEvents) || maxEvents < 1) {
      throw new TypeError(
        `pixhook: MemoryArchive: maxEvents must be a positive whole number; got ${describeType(maxEvents)}.`,
      );
    }
    if (!Number.isSafeInteger(retentionMs) || retentionMs < 1) {
      throw new TypeError(
        `pixhook: MemoryArchive: retentionMs must be a positive whole number of milliseconds; got ${describeType(retentionMs)}.`,
      );
    }
    if (typeof now !== 'function') throw new TypeError('pixhook: MemoryArchive: now must be a function.');
    this.#maxEvents = maxEvents;
    this.#retentionMs = retentionMs;
    this.#now = now;
  }

  /** Events kept now. */
  get size(): number {
    return this.#events.size;
  }

  async record(entry: ArchiveEntry): Promise<void> {
    const kept = this.#events.get(entry.eventId);
    const outcome = outcomeAfter(kept?.outcome, entry) as InboxOutcome;
    const { body: _body, ...line } = entry as ArchiveEntry & { body?: Uint8Array };
    if (kept === undefined) {
      const delivery = entry.kind === 'delivery' ? entry : undefined;
      this.#events.set(entry.eventId, {
        eventId: entry.eventId,
        eventType: entry.eventType,
        created: delivery?.created,
        firstAt: entry.at,
        lastAt: entry.at,
        outcome,
        deliveries: delivery ? 1 : 0,
        mode: delivery?.mode ?? 'queued',
        // A copy: the caller's buffer may be reused.
        body: delivery ? delivery.body.slice() : new Uint8Array(0),
        headers: delivery ? { ...delivery.headers } : {},
        timeline: [line as InboxTimelineEntry],
      });
      if (this.#events.size > this.#maxEvents) this.#forgetOldest(this.#events.size - this.#maxEvents);
      return;
    }
    kept.outcome = outcome;
    kept.lastAt = Math.max(kept.lastAt, entry.at);
    if (entry.kind === 'delivery') {
      // A job's step may come before the delivery that queued it: the body is its first delivery's.
      if (kept.deliveries === 0) {
        Object.assign(kept, {
          created: entry.created,
          firstAt: entry.at,
          mode: entry.mode,
          body: entry.body.slice(),
          headers: { ...entry.headers },
        });
      }
      kept.deliveries += 1;
    }
    kept.timeline.push(line as InboxTimelineEntry);
  }

  async list(query?: InboxQuery): Promise<InboxPage> {
    const q = checkInboxQuery(query);
    const matching = [...this.#events.values()].filter(
      (e) =>
        (q.type === undefined || e.eventType === q.type) &&
        (q.outcome === undefined || e.outcome === q.outcome) &&
        (q.since === undefined || e.lastAt >= q.since) &&
        (q.until === undefined || e.lastAt < q.until) &&
        (q.eventId === undefined || e.eventId === q.eventId) &&
        (q.deliveryId === undefined ||
          e.timeline.some((t) => t.kind === 'delivery' && t.deliveryId === q.deliveryId)) &&
        (q.after === undefined ||
          e.lastAt < q.after.lastAt ||
          (e.lastAt === q.after.lastAt && e.eventId < q.after.eventId)),
    );
    matching.sort((a, b) => b.lastAt - a.lastAt || (a.eventId < b.eventId ? 1 : a.eventId > b.eventId ? -1 : 0));
    const items = matching.slice(0, q.limit).map(summary);
    const last = items[items.length - 1];
    return { items, next: matching.length > q.limit && last ? inboxCursor(last.lastAt, last.eventId) : undefined };
  }

  async get(eventId: string): Promise<InboxEvent | undefined> {
    const kept = this.#events.get(eventId);
    if (!kept) return undefined;
    // Ordered on `at`, then as written (the sort is stable).
    const timeline = kept.timeline.slice().sort((a, b) => a.at - b.at);
    return { ...summary(kept), body: kept.body.slice(), headers: { ...kept.headers }, timeline };
  }

  /** Runs the replays at once, one after another, in the attached `Webhooks`; resolves with how many it took. */
  async requestReplay(eventIds: readonly string[]): Promise<number> {
    if (!Array.isArray(eventIds)) throw new TypeError('pixhook: requestReplay(eventIds) needs an array of event ids.');
    const known = eventIds.filter((id) => typeof id === 'string' && this.#events.has(id));
    const replay = this.#replay;
    if (replay && known.length > 0) {
      void (async () => {
        for (const id of known) await replay(id).catch(() => {});
      })();
    }
    return known.length;
  }

  attach(replay: (eventId: string) => Promise<unknown>): () => void {
    this.#replay = replay;
    return () => {
      if (this.#replay === replay) this.#replay = undefined;
    };
  }

  async prune(): Promise<number> {
    const before = this.#events.size;
    const oldest = this.#now() - this.#retentionMs;
    for (const [id, kept] of this.#events) if (kept.lastAt < oldest) this.#events.delete(id);
    if (this.#events.size > this.#maxEvents) this.#forgetOldest(this.#events.size - this.#maxEvents);
    return before - this.#events.size;
  }

  async close(): Promise<void> {
    this.#replay = undefined;
  }

  #forgetOldest(count: number): void {
    const byAge = [...this.#events.values()].sort((a, b) => a.lastAt - b.lastAt);
    for (const kept of byAge.slice(0, count)) this.#events.delete(kept.eventId);
  }
}

function summary(kept: Kept): InboxSummary {
  const { eventId, eventType, created, firstAt, lastAt, outcome, deliveries, mode, body } = kept;
  return { eventId, eventType, created, firstAt, lastAt, outcome, deliveries, bytes: body.byteLength, mode };
}
