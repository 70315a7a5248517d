import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { AnyEvent, ErrorContext, HandlerContext, Webhooks, WebhookVerificationError } from '@pixhook/core';
import { registrationsOf } from './decorators.js';

type Method = (...args: unknown[]) => unknown;

/**
 * Adds every `@OnWebhook()`, `@OnAnyWebhook()` and `@OnWebhookError()` method of the app's
 * providers and controllers to `webhooks`, called on the instance Nest built (so its injected
 * dependencies are there). One instance reached under several tokens (`useExisting`) is added once.
 * Throws at startup for a request-scoped or transient provider (there is no one instance to call)
 * and for a class Nest built twice (listed in two modules' providers): its methods would run twice
 * per event.
 *
 * @returns how many methods were added
 */
export function addDecoratedHandlers(
  // biome-ignore lint/suspicious/noExplicitAny: any event map, request and transaction type
  webhooks: Webhooks<any, any, any>,
  discovery: DiscoveryService,
  scanner: MetadataScanner,
): number {
  const seen = new Set<object>();
  const owners = new Map<object, { instance: object; token: string }>();
  let added = 0;
  for (const wrapper of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const instance: unknown = wrapper.instance;
    if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
    const prototype = Object.getPrototypeOf(instance) as object | null;
    if (prototype === null || prototype === Object.prototype) continue;
    seen.add(instance);
    let checked = false;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const registrations = registrationsOf((prototype as Record<string, unknown>)[name]);
      if (registrations.length === 0) continue;
      const where = `${instance.constructor?.name ?? 'a provider'}.${name}`;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new Error(
          `pixhook: ${where} has a webhook decorator, but its provider is request-scoped or transient (or depends on one), so there is no one instance to call. Put the handler on a default-scoped provider and inject what it needs from there.`,
        );
      }
      if (!checked) {
        checked = true;
        const owner = owners.get(prototype);
        const token = `${wrapper.host?.name ?? 'a module'}`;
        if (owner !== undefined) {
          throw new Error(
            `pixhook: ${where} has a webhook decorator, and Nest built its class twice (in ${owner.token} and in ${token}), so it would run twice per event. Provide the class in one module and export it to the others.`,
          );
        }
        owners.set(prototype, { instance, token });
      }
      // Looked up at each call, as Nest calls its own handlers, so a patched method is the one run.
      const call = (...args: unknown[]) => ((instance as Record<string, Method>)[name] as Method).apply(instance, args);
      for (const registration of registrations) {
        if (registration.kind === 'on') {
          webhooks.on(registration.types, call as (event: AnyEvent, context: HandlerContext) => unknown);
        } else if (registration.kind === 'any') {
          webhooks.onAny(call as (event: AnyEvent, context: HandlerContext) => unknown);
        } else {
          webhooks.onError(call as (error: WebhookVerificationError, context: ErrorContext) => unknown);
        }
        added += 1;
      }
    }
  }
  return added;
}
