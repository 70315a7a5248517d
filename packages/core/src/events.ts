/** The event types the service sends (spec part 6). */
export const EVENT_TYPES = [
  'image.created',
  'image.deleted',
  'api_key.revoked',
  'quota.warned',
  'quota.exceeded',
] as const;

/** One of the service's event types, e.g. `'image.created'`. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * What an app knows about each type's `data.object`. The spec does not fix these fields, so by
 * default every `data.object` is `Record<string, unknown>`; pass your own map to `Webhooks` to
 * narrow them (a type assertion: pixhook checks the envelope, not the fields inside `data.object`).
 *
 * @example
 * interface MyEvents { 'image.created': { id: string; url: string; bytes: number } }
 * const webhooks = new Webhooks<MyEvents>({ secret })
 */
export type EventDataMap = { [K in EventType]?: object };

/** The map used when an app gives none: every `data.object` is `Record<string, unknown>`. */
export type DefaultEventDataMap = Record<never, never>;

/** The envelope of every delivery (spec part 2). */
export interface WebhookEvent<TType extends string = string, TObject = Record<string, unknown>> {
  /** Event identifier, `evt_…`; pixhook de-duplicates on it. */
  id: string;
  /** The event type, equal to the X-Service-Event header. */
  type: TType;
  /** Creation time as the service sent it (an integer). */
  created: number;
  data: { object: TObject };
}

/** `data.object` of type `K` under map `M`. */
export type DataObject<M, K extends string> = K extends keyof M
  ? Exclude<M[K], undefined> extends never
    ? Record<string, unknown>
    : Exclude<M[K], undefined>
  : Record<string, unknown>;

/** The event of one known type, typed through the app's map. */
export type EventOf<M, K extends EventType> = K extends EventType ? WebhookEvent<K, DataObject<M, K>> : never;

/** Every known event, as a union discriminated by `type`. */
export type KnownEvent<M = DefaultEventDataMap> = EventOf<M, EventType>;

/**
 * An event of a type this version of pixhook does not know (the service added one): acknowledged
 * with 200 and passed to `onAny` handlers.
 */
export type UnknownEvent = WebhookEvent<string & {}, Record<string, unknown>>;

/** What `verify` returns and `onAny` handlers receive. */
export type AnyEvent<M = DefaultEventDataMap> = KnownEvent<M> | UnknownEvent;
