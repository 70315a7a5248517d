import { createHash } from 'node:crypto';

/** Event ids as the service writes them (`evt_…`), short and without BullMQ's forbidden `:`. */
const READABLE = /^evt_[A-Za-z0-9_.-]{1,200}$/;

/**
 * The BullMQ job id of an event: its id when it reads as one, else `sha256-<hex>` of it. BullMQ
 * refuses ids with `:` (its key separator) and any id is a Redis key, so a long or odd id (signed,
 * but only checked to start with `evt_`) is hashed. The two forms never meet: one starts `evt_`.
 */
export function jobIdFor(eventId: string): string {
  return READABLE.test(eventId) ? eventId : `sha256-${createHash('sha256').update(eventId).digest('hex')}`;
}

const REPLAY = /^[A-Za-z0-9-]{1,64}$/;

/**
 * The job id of a delivery: the event's (`jobIdFor`), or for a replay from the archive (whose
 * `replay` is its own id) the event's followed by `-replay-<id>`, a new job. A replay id that is
 * not a short UUID-like word is hashed.
 */
export function deliveryJobId(eventId: string, replay: string | undefined): string {
  const id = jobIdFor(eventId);
  if (replay === undefined) return id;
  return `${id}-replay-${REPLAY.test(replay) ? replay : createHash('sha256').update(replay).digest('hex')}`;
}
