// Replays from the archive: an archived event's handlers run again on purpose, from its verified
// bytes (no new signature), past the record that it was processed, and the run is written to its
// timeline. In queued mode a replay is a new job.
import { WebhookVerificationError } from '../protocol/errors.js';
import { eventKey, splitEventKey } from '../protocol/event-key.js';
import type { AnyEvent } from '../protocol/events.js';
import { parseEvent } from '../protocol/parse-event.js';
import type { ArchivedRun, ArchivedStep, InboxQuery, InboxReader, WebhookArchive } from '../seams/archive.js';
import type { AnyHandler, HandlerContext } from '../seams/context.js';
import type { WebhookQueue } from '../seams/queue.js';
import { isSchemaMismatch } from '../seams/schema.js';
import type { IdempotencyStore } from '../seams/store.js';
import { commitFailed, type EventTransactions, type OpenEvent } from '../seams/transactions.js';
import { describeFailure, timedCall, writeEntry } from './archiving.js';
import { type Decisions, type MarkKeeper, orderingOf, shouldRun } from './ordering.js';
import { enqueue, type QueueHost } from './queued.js';
import { beginEvent, claimEvent, completeClaim, type HeldClaim, releaseClaim } from './store-protocol.js';

/**
 * What a replay came to: `processed` (the handlers ran and succeeded), `failed` (one failed, or
 * the event could not be claimed: `error` says why), `queued` (queued mode: written as a new job),
 * `running` (the event is being processed right now, by a delivery or another replay: not run),
 * `completed` (transactional mode with an `EventTransactions` that cannot replay: not run),
 * `not-found` (not in the archive: never archived, or pruned).
 */
export type ReplayOutcome = 'processed' | 'failed' | 'queued' | 'running' | 'completed' | 'not-found';

/** The result of one replay. */
export interface ReplayResult {
  readonly eventId: string;
  readonly outcome: ReplayOutcome;
  /** Why it failed: the handler's own error, or a `WebhookVerificationError`. */
  readonly error?: unknown;
}

/** Options of `webhooks.replayMany()`. */
export interface ReplayManyOptions {
  /** Most events replayed; the rest of the matching ones are left (`replayMany` says how many it ran). @default 1000 */
  max?: number;
}

/** What a replay needs from a `Webhooks`. */
export interface ReplayHost extends QueueHost {
  readonly options: QueueHost['options'] & {
    readonly archive: WebhookArchive | undefined;
    readonly store: IdempotencyStore | false;
    /** Set when secrets are per tenant: then the archive names events `<tenant>/<event id>`. */
    readonly tenantSecrets: unknown;
  };
}

/** The archive, when it can be read back; else the TypeError that says why a replay cannot run. */
function readableArchive(host: ReplayHost, where: string): WebhookArchive & InboxReader {
  const archive = host.options.archive as (WebhookArchive & Partial<InboxReader>) | undefined;
  if (archive === undefined) {
    throw new TypeError(
      `pixhook: ${where} replays from the archive: give new Webhooks({ archive }) one (PostgresArchive, RedisArchive).`,
    );
  }
  if (typeof archive.get !== 'function' || typeof archive.list !== 'function') {
    throw new TypeError(`pixhook: ${where}: this archive cannot be read back (it has no get() and list()).`);
  }
  return archive as WebhookArchive & InboxReader;
}

/** Runs one archived event's handlers again. Never rejects for the event's sake (only for a missing archive). */
export async function replayEvent(host: ReplayHost, eventId: string): Promise<ReplayResult> {
  if (typeof eventId !== 'string' || eventId === '') {
    throw new TypeError('pixhook: replay(eventId) needs the id of an archived event.');
  }
  const archive = readableArchive(host, 'replay()');
  let event: AnyEvent;
  let deliveryId: string;
  let timestamp: number;
  let secretIndex: number | undefined;
  // With secrets per tenant the archive names events by their key, `<tenant>/<event id>`.
  const tenant = host.options.tenantSecrets === undefined ? undefined : splitEventKey(eventId)?.tenant;
  try {
    const stored = await archive.get(eventId);
    if (stored === undefined) return { eventId, outcome: 'not-found' };
    event = parseEvent(stored.body);
    if (eventKey(event.id, tenant) !== eventId) {
      throw new WebhookVerificationError(
        'INVALID_EVENT',
        `The archived body of event ${eventId} holds event ${event.id}: the archive's row was changed; not replayed.`,
      );
    }
    const first = stored.timeline.find((entry) => entry.kind === 'delivery');
    deliveryId = first?.kind === 'delivery' ? first.deliveryId : '';
    timestamp = first?.kind === 'delivery' ? first.timestamp : Math.floor(host.options.now() / 1000);
    secretIndex = first?.kind === 'delivery' ? first.secretIndex : undefined;
  } catch (cause) {
    const error =
      cause instanceof WebhookVerificationError
        ? cause
        : new WebhookVerificationError(
            'ARCHIVE_FAILED',
            `The archive could not give event ${eventId} back for a replay.`,
            {
              cause,
            },
          );
    host.reportError(error, { request: undefined });
    return { eventId, outcome: 'failed', error };
  }
  const context: HandlerContext = { deliveryId, timestamp, request: undefined, replay: true };
  if (tenant !== undefined) context.tenant = tenant;
  if (typeof secretIndex === 'number') context.secret = { index: secretIndex };
  const replay = new Replay(host, archive, event, eventId, context);
  return replay.run();
}

/** Replays every archived event `query` matches, newest first, one after another, up to `max`. */
export async function replayMatching(
  host: ReplayHost,
  query: InboxQuery,
  options: ReplayManyOptions = {},
): Promise<ReplayResult[]> {
  const archive = readableArchive(host, 'replayMany()');
  const max = options.max ?? 1000;
  if (!Number.isSafeInteger(max) || max <= 0) {
    throw new TypeError('pixhook: replayMany(query, { max }): max must be a positive whole number.');
  }
  if (typeof query !== 'object' || query === null) {
    throw new TypeError('pixhook: replayMany(query) needs a query object ({} for every archived event).');
  }
  const ids: string[] = [];
  let cursor: string | undefined = query.cursor;
  do {
    const page = await archive.list({ ...query, cursor, limit: Math.min(500, max - ids.length) });
    for (const item of page.items) if (ids.length < max) ids.push(item.eventId);
    cursor = page.next;
  } while (cursor !== undefined && ids.length < max);
  const results: ReplayResult[] = [];
  for (const id of ids) results.push(await replayEvent(host, id));
  return results;
}

/** One replay of one event. */
class Replay {
  readonly #runs: ArchivedRun[] = [];
  readonly #started = performance.now();

  /**
   * @param key - the event's key: its id, scoped by tenant (`<tenant>/<event id>`) when secrets
   *   are per tenant; what the store, the transactions and the archive know it by
   */
  constructor(
    readonly host: ReplayHost,
    readonly archive: WebhookArchive,
    readonly event: AnyEvent,
    readonly key: string,
    readonly context: HandlerContext,
  ) {}

  report = (error: WebhookVerificationError): void => {
    const { deliveryId, timestamp, tenant, secret } = this.context;
    this.host.reportError(error, { request: undefined, deliveryId, timestamp, event: this.event, tenant, secret });
  };

  async run(): Promise<ReplayResult> {
    const { queue, transactions, store } = this.host.options;
    if (queue !== undefined) return this.#enqueue(queue);
    if (transactions !== undefined) return this.#inTransaction(transactions);
    return this.#claimed(store);
  }

  /**
   * Queued mode: a new job, with its own id. Its step is written first: a worker may run the job
   * (and write its own) before the enqueue's answer is back. A failed enqueue adds a failed step.
   */
  async #enqueue(queue: WebhookQueue): Promise<ReplayResult> {
    const { event, context } = this;
    const replay = globalThis.crypto.randomUUID();
    await this.#record('queued');
    const { deliveryId, timestamp, tenant, secret } = context;
    const outcome = await enqueue(
      this.host,
      queue,
      { event, deliveryId, timestamp, replay, tenant, secret },
      undefined,
    );
    if (outcome.kind === 'rejected') return this.#ended('failed', outcome.error);
    return { eventId: this.key, outcome: 'queued' };
  }

  /** Transactional mode: the event's transaction, opened past its processed record. */
  async #inTransaction(transactions: EventTransactions): Promise<ReplayResult> {
    const begun = await beginEvent(transactions, this.key, this.event.type, true);
    if (begun.kind === 'completed') return { eventId: this.key, outcome: 'completed' };
    if (begun.kind === 'rejected') return this.#refused(begun.error);
    const open = begun.open as OpenEvent<unknown>;
    const failure = await this.#handlers({ ...this.context, transaction: open.transaction }, { store: false, open });
    if (failure !== undefined) {
      await Promise.resolve()
        .then(() => open.rollback())
        .catch(() => {});
      return this.#ended('failed', failure);
    }
    await this.#record('processed', open.transaction);
    try {
      await open.commit();
    } catch (cause) {
      const error = commitFailed(this.key, cause);
      this.report(error);
      return this.#ended('failed', error);
    }
    return { eventId: this.key, outcome: 'processed' };
  }

  /**
   * With a store: the event's own claim when it was never completed (completed on success, so its
   * deliveries become duplicates); else a replay claim beside its completed record, so two replays
   * of one event never run at once. Without a store: just run.
   */
  async #claimed(store: IdempotencyStore | false): Promise<ReplayResult> {
    let claimed = await claimEvent(store, this.key, this.report);
    let own = true;
    if (claimed.kind === 'completed') {
      own = false;
      claimed = await claimEvent(store, `pixhook-replay:${this.key}`, this.report);
    }
    if (claimed.kind === 'rejected') return this.#refused(claimed.error);
    if (claimed.kind === 'completed') return { eventId: this.key, outcome: 'completed' };
    const claim: HeldClaim = claimed;
    const failure = await this.#handlers(this.context, { store, open: undefined });
    if (failure === undefined && own) await completeClaim(claim, this.report);
    else await releaseClaim(claim, this.report);
    if (failure !== undefined) return this.#ended('failed', failure);
    await this.#record('processed');
    return { eventId: this.key, outcome: 'processed' };
  }

  /** Runs the handlers one after another; the first failure stops them and is returned (and reported). */
  async #handlers(context: HandlerContext, marks: MarkKeeper): Promise<unknown> {
    const handlers = this.host.handlersFor(this.event.type);
    const decisions: Decisions = new Map();
    for (let i = 0; i < handlers.length; i++) {
      try {
        const handler = handlers[i] as AnyHandler;
        // A replay keeps to the ordering guard: an old event replayed must not roll state back.
        const ordering = orderingOf(handler, this.host.options.ordering);
        if (
          ordering !== undefined &&
          !(await shouldRun(ordering, this.event, context.tenant, marks, decisions, this.report, handler.name))
        ) {
          continue;
        }
        await timedCall(this.#runs, handler, i, this.event, context, undefined);
      } catch (cause) {
        // Skipped by its schema: reported, and the others run (as in a delivery).
        if (isSchemaMismatch(cause)) {
          this.report(cause);
          continue;
        }
        this.report(
          new WebhookVerificationError(
            'HANDLER_FAILED',
            `A handler for ${this.event.type} failed while event ${this.key} was replayed from the archive; run the replay again once it is fixed.`,
            { cause },
          ),
        );
        return cause ?? new Error('A handler rejected without a reason.');
      }
    }
    return undefined;
  }

  /** A claim that was refused: `running` for an event in flight, `failed` for a store that failed. */
  #refused(error: WebhookVerificationError): ReplayResult {
    if (error.code === 'IN_FLIGHT') return { eventId: this.key, outcome: 'running', error };
    this.report(error);
    return { eventId: this.key, outcome: 'failed', error };
  }

  /** A failed replay: archived as one, and answered. */
  async #ended(outcome: 'failed', error: unknown): Promise<ReplayResult> {
    await this.#record(outcome, undefined, error);
    return { eventId: this.key, outcome, error };
  }

  #record(result: ArchivedStep['result'], transaction?: unknown, cause?: unknown): Promise<boolean> {
    const step: ArchivedStep = {
      kind: 'replay',
      eventId: this.key,
      eventType: this.event.type,
      at: this.host.options.now(),
      result,
      ms: performance.now() - this.#started,
      runs: this.#runs.slice(),
      ...(cause === undefined ? {} : { error: describeFailure(cause) }),
    };
    return writeEntry(this.archive, step, this.report, transaction);
  }
}
