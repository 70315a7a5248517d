import { createHash } from 'node:crypto';

/**
 * Keys that read as job ids: an event id as the service writes it (`evt_…`), alone or after a short
 * tenant (`eventKey`'s form, `<tenant, URI-encoded>/evt_…`, so the tenant holds no `/` or `:`), and
 * for the job of a named handler followed by `#<handler id>` (`deliveryKey`'s form; a handler id is
 * 1 to 64 of `A-Z a-z 0-9 _ . -`). Short, and without BullMQ's forbidden `:`.
 */
const READABLE = /^(?:[A-Za-z0-9_.~%-]{1,64}\/)?evt_[A-Za-z0-9_.-]{1,200}(?:#[A-Za-z0-9_.-]{1,64})?$/;

/**
 * The BullMQ job id of a delivery's key (`deliveryKey(delivery)` from `@pixhook/core`: the event id,
 * `<tenant>/<event id>` with secrets per tenant, and `#<handler id>` after it for the job of a named
 * handler): the key itself when it reads as one, else `sha256-<hex>` of it. BullMQ refuses ids with
 * `:` (its key separator) and any id is a Redis key, so a long or odd key (the event id is signed,
 * but only checked to start with `evt_`; a tenant with characters `encodeURIComponent` keeps, such
 * as `(`) is hashed. The forms never meet: a readable id starts `evt_` or holds a `/`, a hashed one
 * does neither; and a readable id is its key, so two keys never share one.
 * @example jobIdFor('evt_123') // 'evt_123'
 * @example jobIdFor('acme/evt_123') // 'acme/evt_123'
 * @example jobIdFor('evt_123#thumbnails') // 'evt_123#thumbnails', the job of the handler named thumbnails
 * @example jobIdFor('evt_with:colon') // 'sha256-…'
 */
export function jobIdFor(key: string): string {
  return READABLE.test(key) ? key : `sha256-${createHash('sha256').update(key).digest('hex')}`;
}

const REPLAY = /^[A-Za-z0-9-]{1,64}$/;

/**
 * The job id of a delivery whose key is `key` (`deliveryKey(delivery)`): the key's (`jobIdFor`),
 * or for a replay from the archive (whose `replay` is its own id) the key's followed by
 * `-replay-<id>`, a new job. A replay id that is not a short UUID-like word is hashed.
 */
export function deliveryJobId(key: string, replay: string | undefined): string {
  const id = jobIdFor(key);
  if (replay === undefined) return id;
  return `${id}-replay-${REPLAY.test(replay) ? replay : createHash('sha256').update(replay).digest('hex')}`;
}
