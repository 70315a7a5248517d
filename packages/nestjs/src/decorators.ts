import {
  type AnyEvent,
  type DefaultEventDataMap,
  type ErrorContext,
  EVENT_TYPES,
  type EventOf,
  type EventType,
  type HandlerContext,
  type WebhookVerificationError,
} from '@pixhook/core';

/** What `@OnWebhook()`, `@OnAnyWebhook()` and `@OnWebhookError()` record on a method. */
export type WebhookRegistration = { kind: 'on'; types: readonly EventType[] } | { kind: 'any' } | { kind: 'error' };

/**
 * Where the registrations live: a property of the method function under a registered symbol, so
 * two copies of this package (an ESM and a CJS one) see the same ones, without reflect-metadata.
 */
const REGISTRATIONS = Symbol.for('@pixhook/nestjs:registrations');

type Registered = { [REGISTRATIONS]?: WebhookRegistration[] };

/** The registrations of a method, in the order its decorators ran; empty for any other value. */
export function registrationsOf(method: unknown): readonly WebhookRegistration[] {
  return (typeof method === 'function' && (method as Registered)[REGISTRATIONS]) || [];
}

/** The context handlers receive: the request is the Express `req` or the Fastify `request`. */
// biome-ignore lint/suspicious/noExplicitAny: the transaction's type comes from the `transactions` option
export type WebhookHandlerContext = HandlerContext & { transaction: any };

/** A method `@OnWebhook(types)` accepts: it takes the event of those types (and the context). */
export type WebhookMethod<TEvent> = (event: TEvent, context: WebhookHandlerContext) => unknown;

/** A method `@OnWebhookError()` accepts. */
export type WebhookErrorMethod = (error: WebhookVerificationError, context: ErrorContext) => unknown;

const KNOWN = new Set<string>(EVENT_TYPES);

function record(decorator: string, registration: WebhookRegistration): MethodDecorator {
  return (target, key, descriptor) => {
    const method: unknown = descriptor?.value;
    if (typeof method !== 'function') {
      throw new TypeError(
        `pixhook: ${decorator} goes on a method; ${String(key)} of ${describeTarget(target)} is not one.`,
      );
    }
    const registered = method as Registered;
    // Own list per method: a subclass's override must not add to its parent's.
    const list = Object.hasOwn(registered, REGISTRATIONS) ? (registered[REGISTRATIONS] ?? []) : [];
    Object.defineProperty(registered, REGISTRATIONS, {
      value: [...list, registration],
      configurable: true,
      enumerable: false,
      writable: false,
    });
  };
}

function describeTarget(target: object): string {
  const name = typeof target === 'function' ? target.name : target?.constructor?.name;
  return name ? `class ${name}` : 'this class';
}

/**
 * Runs the method for deliveries of these event types, like `webhooks.on(type, handler)`: once
 * per event, again on the service's retry when it throws (the delivery answers 500
 * `HANDLER_FAILED`). The method is called on the provider's instance, so its injected dependencies
 * are there. Its first parameter is the verified event: a method whose event type does not fit
 * the decorator's types is a type error. Unknown type names throw when the class is defined.
 *
 * @param type - one event type or several
 * @example
 * @Injectable()
 * export class ImageHandlers {
 *   constructor(private readonly images: ImagesService) {}
 *
 *   @OnWebhook('image.created')
 *   async created(event: WebhookEventOf<'image.created'>, context: WebhookHandlerContext) {
 *     await this.images.index(event.data.object, context.deliveryId)
 *   }
 * }
 */
export function OnWebhook<K extends EventType>(
  type: K | readonly K[],
): <H extends WebhookMethod<EventOf<DefaultEventDataMap, K>>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<H>,
) => void {
  const types: readonly string[] = Array.isArray(type) ? type : [type as K];
  if (types.length === 0) throw new TypeError('pixhook: @OnWebhook([]) needs at least one event type.');
  for (const t of types) {
    if (!KNOWN.has(t)) {
      throw new TypeError(
        `pixhook: @OnWebhook(${JSON.stringify(t)}): not an event type pixhook knows (${EVENT_TYPES.join(', ')}); use @OnAnyWebhook() for types the service may add.`,
      );
    }
  }
  return record(`@OnWebhook(${JSON.stringify(type)})`, { kind: 'on', types: [...types] as EventType[] });
}

/**
 * Runs the method for every verified delivery, known types and types the service added later
 * alike, like `webhooks.onAny(handler)`.
 *
 * @example
 * @OnAnyWebhook()
 * audit(event: AnyEvent) { this.log.info(event.type) }
 */
export function OnAnyWebhook(): <H extends WebhookMethod<AnyEvent>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<H>,
) => void {
  return record('@OnAnyWebhook()', { kind: 'any' });
}

/**
 * Calls the method for every rejected delivery and every handler or store failure, like
 * `webhooks.onError(listener)`: synchronously, and what it throws is ignored. It is told; it does
 * not decide the answer.
 *
 * @example
 * @OnWebhookError()
 * failed(error: WebhookVerificationError, context: ErrorContext) { this.log.warn(error.code, context.deliveryId) }
 */
export function OnWebhookError(): <H extends WebhookErrorMethod>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<H>,
) => void {
  return record('@OnWebhookError()', { kind: 'error' });
}

/**
 * The event `@OnWebhook(type)` methods receive, for their first parameter.
 * @example
 * created(event: WebhookEventOf<'image.created'>) {}
 */
export type WebhookEventOf<K extends EventType, M = DefaultEventDataMap> = EventOf<M, K>;
