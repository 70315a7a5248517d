import type { InboxReader } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { expect } from 'vitest';
import type { TestRequest } from './adapters.js';
import { signedBody } from './deliveries.js';

/**
 * A signed delivery whose bytes no re-serialisation keeps: odd spacing, escapes, non-ASCII and a
 * key order of its own, so an archive that kept `JSON.stringify(event)` instead of the bytes fails.
 */
export function oddDelivery(eventId = `evt_inbox_${globalThis.crypto.randomUUID().slice(0, 8)}`) {
  const event = createTestEvent('image.created', { id: 'img_ünïcödé', caption: 'a "quoted" caption' });
  const text = `{ "type" : "image.created",\n  "id":"${eventId}", "created": ${event.created},\t"data": {"object": {"id":"img_\\u00fcn\\u00efc\\u00f6d\\u00e9","caption":"a \\"quoted\\" caption 🐙"}} }`;
  const body = new TextEncoder().encode(text);
  const request = signedBody(body, 'image.created') as TestRequest & {
    headers: Record<string, string>;
    body: Uint8Array;
  };
  request.headers['x-request-note'] = 'kept as received';
  return { eventId, body, request };
}

/** Waits (polling the archive, up to `ms`) for `eventId`'s timeline to have `entries` entries. */
export async function archived(inbox: InboxReader, eventId: string, entries = 1, ms = 15_000) {
  const until = Date.now() + ms;
  for (;;) {
    const event = await inbox.get(eventId);
    if (event && event.timeline.length >= entries) return event;
    if (Date.now() > until) throw new Error(`event ${eventId} did not reach ${entries} archive entries in ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The archive holds exactly the bytes and the headers that were sent. */
export async function expectKeptExactly(
  inbox: InboxReader,
  sent: ReturnType<typeof oddDelivery>,
  expected: { outcome: string; mode: string; result: string },
) {
  const kept = await archived(inbox, sent.eventId);
  expect(Buffer.from(kept.body).equals(Buffer.from(sent.body))).toBe(true);
  for (const name of ['x-service-event', 'x-service-delivery', 'x-service-signature', 'x-request-note']) {
    expect(kept.headers[name]).toBe(sent.request.headers[name]);
  }
  expect(kept.mode).toBe(expected.mode);
  expect(kept.timeline[0]).toMatchObject({ kind: 'delivery', result: expected.result });
  return kept;
}
