// The archive's part of every mode: timing each handler's run, and writing an entry to the
// `archive` under its deadline without ever changing an answer (a failure is ARCHIVE_FAILED).

import { WebhookVerificationError } from '../protocol/errors.js';
import { eventKey } from '../protocol/event-key.js';
import type { AnyEvent } from '../protocol/events.js';
import type { VerifiedDelivery } from '../protocol/verify.js';
import type { ArchivedDelivery, ArchivedRun, ArchiveEntry, ArchiveMode, WebhookArchive } from '../seams/archive.js';
import type { AnyHandler, HandlerContext } from '../seams/context.js';
import { callHandler, type DeliveryMessage, type JobMessage } from '../seams/diagnostics.js';
import { cancelDeadline, setDeadline } from '../util/deadlines.js';
import { isThenable } from '../util/maybe.js';
import type { Outcome } from './outcome.js';

/** How long core waits for `archive.record` by default, in ms. */
export const DEFAULT_ARCHIVE_WRITE_MS = 2_000;

/** Characters of a failure's message kept in the archive. */
const ERROR_CHARACTERS = 500;

/** A failure as the archive keeps it: its class and message, cut. Never throws. */
export function describeFailure(cause: unknown): string {
  try {
    const name =
      cause instanceof Error
        ? cause.name || 'Error'
        : typeof cause === 'object' && cause !== null
          ? 'Object'
          : typeof cause;
    const message = cause instanceof Error ? String(cause.message) : String(cause);
    const text = `${name}: ${message}`;
    return text.length > ERROR_CHARACTERS ? `${text.slice(0, ERROR_CHARACTERS)}…` : text;
  } catch {
    return 'an error that could not be described';
  }
}

/**
 * `callHandler`, timed into `runs` (the archive's record of the run). The handler's result is
 * returned as it is: a promise is watched on the side, its outcome is the caller's to handle.
 */
export function timedCall(
  runs: ArchivedRun[],
  handler: AnyHandler,
  index: number,
  event: AnyEvent,
  context: HandlerContext,
  trace: DeliveryMessage | JobMessage | undefined,
): unknown {
  const handlerName = handler.name || `#${index}`;
  const started = performance.now();
  const done = (ok: boolean, cause?: unknown) => {
    const ms = performance.now() - started;
    runs.push(ok ? { handler: handlerName, ms, ok } : { handler: handlerName, ms, ok, error: describeFailure(cause) });
  };
  let result: unknown;
  try {
    result = callHandler(handler, index, event, context, trace);
    if (isThenable(result)) {
      Promise.resolve(result).then(
        () => done(true),
        (cause: unknown) => done(false, cause),
      );
      return result;
    }
  } catch (cause) {
    done(false, cause);
    throw cause;
  }
  done(true);
  return result;
}

/**
 * Writes `entry` to `archive`; resolves true when written, false when `writeTimeoutMs` (or
 * `atMostMs`, when shorter) passed first or it failed (then `report` hears `ARCHIVE_FAILED`). Never rejects. With `transaction`, the entry is
 * written through the event's open transaction and is reported on failure the same way.
 */
export function writeEntry(
  archive: WebhookArchive,
  entry: ArchiveEntry,
  report: (error: WebhookVerificationError) => void,
  transaction?: unknown,
  atMostMs?: number,
): Promise<boolean> {
  const own = archiveWriteMs(archive);
  const limit = atMostMs !== undefined && atMostMs < own ? Math.max(1, atMostMs) : own;
  const failed = (why: string, cause?: unknown) => {
    report(
      new WebhookVerificationError(
        'ARCHIVE_FAILED',
        `The archive could not record ${entry.kind === 'delivery' ? 'a delivery' : `a ${entry.kind}`} of event ${entry.eventId} (${entry.eventType}) ${why}; the event was handled as it would have been without an archive.`,
        { cause },
      ),
    );
    return false;
  };
  const written = new Promise<unknown>((resolve) =>
    resolve(transaction === undefined ? archive.record(entry) : archive.record(entry, transaction)),
  );
  return new Promise<boolean>((resolve) => {
    let settled = false;
    const deadline = setDeadline(limit, () => {
      settled = true;
      resolve(failed(`within its writeTimeoutMs (${limit} ms)`));
    });
    written.then(
      () => {
        cancelDeadline(deadline);
        if (!settled) resolve(true);
      },
      (cause: unknown) => {
        cancelDeadline(deadline);
        if (!settled) resolve(failed('because the write failed', cause));
      },
    );
  });
}

/** The archive's own write deadline when it gives a sound one, else the default. */
function archiveWriteMs(archive: WebhookArchive): number {
  const own = archive.writeTimeoutMs;
  return typeof own === 'number' && Number.isSafeInteger(own) && own > 0 ? own : DEFAULT_ARCHIVE_WRITE_MS;
}

/** A verified delivery's entry while it is being handled: what the archive keeps of it once answered. */
export interface DeliveryDraft {
  readonly delivery: VerifiedDelivery;
  readonly body: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
  readonly mode: ArchiveMode;
  /** When `handle()` was called (`performance.now()`). */
  readonly startedAt: number;
  /** The handlers' runs, as they end. */
  readonly runs: ArchivedRun[];
  /** Transactional mode: the entry was committed with the event's transaction; nothing is left to write. */
  committed: boolean;
}

/**
 * The archive's entry for a delivery whose outcome is `outcome`, `now` being the clock's time (ms
 * since the epoch): the entry's `at` is when the delivery arrived, before anything it caused (a
 * queue worker may end its job before the 202 is sent).
 */
export function deliveryEntry(draft: DeliveryDraft, outcome: Outcome, now: number): ArchivedDelivery {
  const elapsed = performance.now() - draft.startedAt;
  const { event, deliveryId, timestamp, secretIndex, tenant } = draft.delivery;
  const status = outcome.kind === 'done' ? 200 : outcome.kind === 'queued' ? 202 : outcome.error.status;
  const result =
    outcome.kind === 'done'
      ? outcome.duplicate
        ? 'duplicate'
        : 'processed'
      : outcome.kind === 'queued'
        ? 'queued'
        : outcome.error.code === 'IN_FLIGHT'
          ? 'in-flight'
          : 'failed';
  return {
    kind: 'delivery',
    // Scoped by tenant, as the store's claims are: `acme/evt_1`.
    eventId: eventKey(event.id, tenant),
    eventType: event.type,
    created: typeof event.created === 'number' ? event.created : undefined,
    deliveryId,
    timestamp,
    at: Math.round(now - elapsed),
    body: draft.body,
    headers: draft.headers,
    secretIndex,
    mode: draft.mode,
    status,
    result,
    ...(outcome.kind === 'rejected' ? { code: outcome.error.code } : {}),
    ms: elapsed,
    runs: draft.runs.slice(),
  };
}

/** Most headers kept per delivery, and the longest value: the HTTP server bounds them too. */
const MAX_HEADERS = 200;
const MAX_HEADER_CHARACTERS = 16_384;

/** The request's headers as the archive keeps them: names lower-cased, repeated values joined with `, `. */
export function recordedHeaders(headers: unknown): Record<string, string> {
  const kept: Record<string, string> = {};
  let count = 0;
  const keep = (name: string, value: unknown) => {
    if (count >= MAX_HEADERS || value === undefined) return;
    const text = Array.isArray(value) ? value.map(String).join(', ') : String(value);
    const key = name.toLowerCase();
    if (!(key in kept)) count++;
    kept[key] = text.length > MAX_HEADER_CHARACTERS ? text.slice(0, MAX_HEADER_CHARACTERS) : text;
  };
  try {
    if (typeof headers !== 'object' || headers === null) return kept;
    const each = (headers as { forEach?: unknown }).forEach;
    if (typeof each === 'function' && typeof (headers as { get?: unknown }).get === 'function') {
      (headers as Headers).forEach((value, name) => {
        keep(name, value);
      });
    } else {
      for (const name of Object.keys(headers)) keep(name, (headers as Record<string, unknown>)[name]);
    }
  } catch {
    // Headers that cannot be read are kept as far as they could.
  }
  return kept;
}
