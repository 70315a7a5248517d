import type { EventType, WebhookEvent } from './protocol/events.js';
import { sign } from './protocol/sign.js';

/** Realistic `data.object` samples for each event type, as the service might send them. */
export const SAMPLE_OBJECTS: { readonly [K in EventType]: Record<string, unknown> } = {
  'image.created': {
    id: 'img_8TqKz2Lw',
    filename: 'sunset-over-harbour.jpg',
    content_type: 'image/jpeg',
    bytes: 482_113,
    width: 1920,
    height: 1080,
    url: 'https://images.example.com/img_8TqKz2Lw.jpg',
    status: 'active',
  },
  'image.deleted': {
    id: 'img_8TqKz2Lw',
    status: 'soft-deleted',
    deleted_by: 'dashboard',
  },
  'api_key.revoked': {
    id: 'key_3HnV0pQx',
    name: 'CI uploader',
    last4: 'a9f2',
    revoked_by: 'owner',
  },
  'quota.warned': {
    plan: 'pro',
    used_bytes: 8_750_000_000,
    limit_bytes: 10_000_000_000,
    used_percent: 87.5,
    threshold_percent: 80,
  },
  'quota.exceeded': {
    plan: 'pro',
    used_bytes: 10_000_412_001,
    limit_bytes: 10_000_000_000,
    uploads_blocked: true,
  },
};

function randomSuffix(): string {
  return globalThis.crypto.randomUUID().replaceAll('-', '').slice(0, 24);
}

/**
 * Builds an event envelope as the service would send it.
 *
 * @param type - the event type (any string, to test types pixhook does not know)
 * @param object - its `data.object`; @default a realistic sample for the type (`{}` for unknown types)
 * @param overrides - envelope fields to set: `id` (@default `evt_test_<random>`), `created`
 *   (@default now, in Unix seconds)
 * @example
 * const event = createTestEvent('image.deleted', { id: 'img_1' })
 */
export function createTestEvent<K extends EventType | (string & {}), O extends object = Record<string, unknown>>(
  type: K,
  object?: O,
  overrides: { id?: string; created?: number } = {},
): WebhookEvent<K, O> {
  const sample = (SAMPLE_OBJECTS as Record<string, Record<string, unknown>>)[type];
  return {
    id: overrides.id ?? `evt_test_${randomSuffix()}`,
    type,
    created: overrides.created ?? Math.floor(Date.now() / 1000),
    data: { object: (object ?? { ...sample }) as O },
  };
}

/** Options of `createSignedRequest`. */
export interface SignedRequestOptions {
  /** The signing secret. */
  secret: string;
  /** The signature's `t`, Unix seconds (digits as text keep leading zeros). @default now */
  timestamp?: number | string;
  /** The X-Service-Delivery header. @default a random UUID */
  deliveryId?: string;
}

/** A request as the service would send it. */
export interface SignedRequest {
  /** The exact JSON text that was signed. */
  body: string;
  /** Lower-case names: content-type, x-service-event, x-service-delivery, x-service-signature. */
  headers: {
    'content-type': string;
    'x-service-event': string;
    'x-service-delivery': string;
    'x-service-signature': string;
  };
}

/**
 * Serialises and signs an event, with all four delivery headers, ready to send to your endpoint.
 *
 * @example
 * const { body, headers } = createSignedRequest(createTestEvent('image.created'), { secret })
 * await request(app).post('/webhooks').set(headers).send(body).expect(200)
 */
export function createSignedRequest(event: WebhookEvent<string, object>, options: SignedRequestOptions): SignedRequest {
  const body = JSON.stringify(event);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-event': event.type,
      'x-service-delivery': options.deliveryId ?? globalThis.crypto.randomUUID(),
      'x-service-signature': sign(options.secret, body, options.timestamp),
    },
  };
}

export { sign } from './protocol/sign.js';
