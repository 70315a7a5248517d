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

/** `'a, b, c'` from `['a', 'b', 'c']`, for messages. */
type Join<T extends readonly string[]> = T extends readonly [infer Head extends string, ...infer Tail extends string[]]
  ? Tail extends []
    ? Head
    : `${Head}, ${Join<Tail>}`
  : never;

/** Keys of `M` that are not event types (a misspelling); an index signature is not a key. */
type NotEventTypes<M> = {
  [K in keyof M]-?: K extends EventType
    ? never
    : string extends K
      ? never
      : number extends K
        ? never
        : symbol extends K
          ? never
          : K;
}[keyof M];

/** `'image.created, image.deleted, …'`. */
type KnownTypes = Join<typeof EVENT_TYPES>;

/** Each key of `M` that is not an event type must hold this message, which no map value can. */
type OnlyEventTypes<M> = {
  [K in NotEventTypes<M>]: `pixhook: "${K & (string | number)}" is not an event type; known types are ${KnownTypes}`;
};

/**
 * What an app knows about each type's `data.object`. The spec does not fix these fields, so by
 * default every `data.object` is `Record<string, unknown>`; pass your own map to `Webhooks` to
 * narrow them (a type assertion: pixhook checks the envelope, not the fields inside `data.object`).
 * `EventDataMap<M>` is the bound `Webhooks` puts on its map `M`: a key that is not an event type
 * (`'image.craeted'`) is a type error naming it.
 *
 * @typeParam M - the map being checked; a function generic over the map states the same bound
 * @example
 * interface MyEvents { 'image.created': { id: string; url: string; bytes: number } }
 * const webhooks = new Webhooks<MyEvents>({ secret })
 * function register<M extends EventDataMap<M>>(webhooks: Webhooks<M>) {}
 */
export type EventDataMap<M = unknown> = { [K in EventType]?: object } & OnlyEventTypes<M>;

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

declare const unknownEventType: unique symbol;

/**
 * The `type` of an event pixhook does not know: a string at run time (any non-empty one other than
 * the `EventType`s), with a brand that only the type checker sees. TypeScript has no type for "any
 * string but these", and a plain `string` here would keep this arm in every `event.type === 'quota.warned'`
 * check, so `data.object` would not narrow. The brand overlaps no string literal: checks against the
 * known types narrow exactly, and a literal pixhook does not know (`event.type === 'image.updated'`)
 * is refused at compile time. Compare a plain string there: `String(event.type) === 'image.updated'`,
 * or use the `default:` branch of a `switch (event.type)`, where the event is an `UnknownEvent`.
 */
export type UnknownEventType = `${string & {}}` & {
  readonly [unknownEventType]: 'not a type this version of pixhook knows';
};

/**
 * An event of a type this version of pixhook does not know (the service added one): acknowledged
 * with 200 and passed to `onAny` handlers. Its `type` is a string ({@link UnknownEventType}), its
 * `data.object` any object.
 */
export type UnknownEvent = WebhookEvent<UnknownEventType, Record<string, unknown>>;

/** What `verify` returns and `onAny` handlers receive. */
export type AnyEvent<M = DefaultEventDataMap> = KnownEvent<M> | UnknownEvent;
