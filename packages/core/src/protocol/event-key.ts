// What de-duplication, claims, queue jobs and the archive are keyed on: the signed event id, scoped
// by tenant when secrets are looked up per tenant (two endpoints of one account, each a tenant,
// receive the same event id; and one tenant, who holds its own secret, must not be able to mark
// another tenant's event processed).

/**
 * The key of event `eventId` received for `tenant`: the event id itself without a tenant, else
 * `<tenant, URI-encoded>/<event id>` (the encoded tenant holds no `/`, so the key reads back).
 * @example eventKey('evt_1') // 'evt_1'
 * @example eventKey('evt_1', 'acme') // 'acme/evt_1'
 */
export function eventKey(eventId: string, tenant?: string): string {
  return tenant === undefined ? eventId : `${encodeURIComponent(tenant)}/${eventId}`;
}

/**
 * The key of a verified or queued delivery: `eventKey` of its event id and tenant, and for the job
 * of one named handler (`on(type, { id }, handler)` in queued mode) `#` and the handler's id. Queue
 * engines derive their job ids from it.
 * @example deliveryKey({ event: { id: 'evt_1' }, tenant: 'acme', handler: 'thumbnails' }) // 'acme/evt_1#thumbnails'
 */
export function deliveryKey(delivery: {
  readonly event: { readonly id: string };
  readonly tenant?: string | undefined;
  readonly handler?: string | undefined;
}): string {
  const key = eventKey(delivery.event.id, delivery.tenant);
  return delivery.handler === undefined ? key : handlerKey(key, delivery.handler);
}

/** The key of one named handler's run of the event known by `key`: its own completion record. */
export function handlerKey(key: string, handler: string): string {
  return `${key}#${handler}`;
}

/** The tenant and the event id of a key made by `eventKey` with a tenant; undefined when it is not one. */
export function splitEventKey(key: string): { tenant: string; eventId: string } | undefined {
  const slash = key.indexOf('/');
  if (slash <= 0) return undefined;
  try {
    return { tenant: decodeURIComponent(key.slice(0, slash)), eventId: key.slice(slash + 1) };
  } catch {
    return undefined;
  }
}
