import { type EventType, sign, type WebhookEvent, Webhooks, type WebhooksOptions } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import type { TestRequest } from './adapters.js';

export const SECRET = 'whsec_test_9f8e7d6c5b4a';
export const OLD_SECRET = 'whsec_old_1a2b3c4d';

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A valid delivery of `event` (default: a fresh image.created), with header overrides. */
export function delivery(
  event: WebhookEvent<string, object> = createTestEvent('image.created'),
  options: { secret?: string; timestamp?: number | string; headers?: Record<string, string | undefined> } = {},
): TestRequest & { headers: Record<string, string>; body: string } {
  const signed = createSignedRequest(event, {
    secret: options.secret ?? SECRET,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
  });
  const headers: Record<string, string> = { ...signed.headers };
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  return { method: 'POST', headers, body: signed.body };
}

/** A delivery of an arbitrary body, signed correctly, with the given event header. */
export function signedBody(
  body: string | Uint8Array,
  eventType: string = 'image.created',
  options: { secret?: string; timestamp?: number | string } = {},
): TestRequest & { headers: Record<string, string> } {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-event': eventType,
      'x-service-delivery': globalThis.crypto.randomUUID(),
      'x-service-signature': sign(options.secret ?? SECRET, body, options.timestamp ?? nowSeconds()),
    },
    body,
  };
}

/** The hex HMAC the receiver expects for a request: must never appear in an answer. */
export function expectedSignature(request: { headers: Record<string, string>; body?: unknown }): string {
  return request.headers['x-service-signature']?.match(/v1=([0-9a-f]{64})/)?.[1] ?? '';
}

export function envelope(type: EventType | string, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...createTestEvent(type), ...overrides });
}

/**
 * Webhooks with the test secret that record each handler run with its `context.request`, and the
 * code of each error told to `onError` (so the failures tests cause on purpose are not logged).
 */
export function recordingWebhooks(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const runs: { id: string; request: unknown }[] = [];
  webhooks.onAny((event, context) => void runs.push({ id: event.id, request: context.request }));
  const errors: string[] = [];
  webhooks.onError((error) => void errors.push(error.code));
  return { webhooks, runs, errors };
}

/** The `error.code` of a JSON error answer. */
export const errorCode = (json: unknown): unknown => (json as { error?: { code?: string } })?.error?.code;
