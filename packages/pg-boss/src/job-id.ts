import { createHash } from 'node:crypto';

/**
 * The pg-boss job id of a delivery's key (`deliveryKey(delivery)` from `@pixhook/core`: the event
 * id, or `<tenant>/<event id>` with secrets per tenant, `eventKey(eventId, tenant)`, and
 * `#<handler id>` after it for the job of a named handler): a UUID made from
 * the SHA-256 of the key (RFC 9562's version 8, its format for custom hashes). pg-boss ids are
 * `uuid`s, so the key cannot be used as it is; the same key always gives the same job id, in every
 * process, which is what de-duplicates deliveries (pg-boss inserts a job `ON CONFLICT DO NOTHING`
 * on its queue and id).
 * @example pgBossJobIdFor('evt_123') // '…-…-8…-…-…', the same every time
 * @example pgBossJobIdFor('acme/evt_123') // tenant acme's job of that event: another id
 * @example pgBossJobIdFor('evt_123#thumbnails') // the job of the handler named thumbnails
 */
export function pgBossJobIdFor(key: string): string {
  return uuidOf(`pixhook:${key}`);
}

/**
 * The pg-boss job id of a delivery whose key is `key` (`deliveryKey(delivery)`): the key's
 * (`pgBossJobIdFor`), or for a replay from the archive (`QueuedDelivery.replay`, its own id) a new
 * one, hashed from both under another prefix (in JSON, so that no pair reads as another).
 */
export function deliveryJobId(key: string, replay: string | undefined): string {
  return replay === undefined ? pgBossJobIdFor(key) : uuidOf(`pixhook-replay:${JSON.stringify([replay, key])}`);
}

function uuidOf(name: string): string {
  const hash = createHash('sha256').update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80; // version 8
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `value` reads as a UUID (a job id), so it can go to Postgres as one. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
