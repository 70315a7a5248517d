/**
 * A value now, or a promise of it. The request pipeline passes these along so that it stays
 * synchronous until something really is asynchronous (the body still arriving, a store on the
 * network, an async handler): every `await` costs a promise and a microtask hop per delivery.
 */
export type Maybe<T> = T | Promise<T>;

/** True for a promise, or any object with a `then` method (what `await` would wait for). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
