// The demo's story: what the service (or an attacker) sends, and what the contract says the
// receiver answers. Each step sends one or two requests and returns rows for the table.
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';

/** A throwaway secret for the demo; never print a real one. */
const SECRET = 'whsec_demo_5f1c2a9e7b';
const now = () => Math.floor(Date.now() / 1000);

/** A POST request as the service sends it; `change` edits headers or body before sending. */
function delivery(event, { secret = SECRET, timestamp, change } = {}) {
  const signed = createSignedRequest(event, { secret, ...(timestamp === undefined ? {} : { timestamp }) });
  const request = { method: 'POST', headers: { ...signed.headers }, body: signed.body };
  change?.(request);
  return request;
}

/**
 * A `Webhooks` for one receiver with a handler for every type, plus a record of which handlers
 * ran for each delivery id. Two test hooks in `data.object`: `fail_once` makes the handler throw
 * on the first delivery of that event; `hold` keeps the handler running until `release()`.
 */
export function createDemoWebhooks() {
  const runs = new Map();
  const failed = new Set();
  let release;
  let signalHeld;
  const released = new Promise((resolve) => {
    release = resolve;
  });
  const held = new Promise((resolve) => {
    signalHeld = resolve;
  });
  const record = (id, name) => runs.set(id, [...(runs.get(id) ?? []), name]);
  const handler =
    (name) =>
    async (event, { deliveryId }) => {
      const object = event.data.object;
      if (object.fail_once && !failed.has(event.id)) {
        failed.add(event.id);
        record(deliveryId, `${name} (threw)`);
        throw new Error('simulated outage in the handler');
      }
      record(deliveryId, name);
      if (object.hold) {
        signalHeld();
        await released;
      }
    };

  const webhooks = new Webhooks({ secret: SECRET });
  webhooks.on('image.created', handler('image.created'));
  webhooks.on('image.deleted', handler('image.deleted'));
  webhooks.on('api_key.revoked', handler('api_key.revoked'));
  webhooks.on(['quota.warned', 'quota.exceeded'], handler('quota.*'));
  webhooks.onAny(handler('onAny'));
  webhooks.onError((_error, context) => {
    // Rejected requests have no verified delivery id; the demo tells them apart by the header.
    record(context.deliveryId ?? context.request?.headers?.['x-service-delivery'], 'onError');
  });
  return { webhooks, ran: (deliveryId) => runs.get(deliveryId) ?? [], held, release };
}

const ok = (...ran) => ({ status: 200, ran });
const fail = (status, code, ...ran) => ({ status, code, ran: [...ran, 'onError'] });

/** A step that sends one request and expects one answer. */
function step(label, request, expected) {
  return async ({ send }) => [{ label, expected, actual: await send(request) }];
}

const created = createTestEvent('image.created');
const flaky = createTestEvent('image.deleted', { id: 'img_8TqKz2Lw', fail_once: true });
const slow = createTestEvent('image.created', { id: 'img_slow', hold: true });
const big = createTestEvent('image.created', { id: 'img_big', padding: 'x'.repeat(1_048_576) });

/** The whole demo, in order. */
export const STEPS = [
  step('image.created, signed', delivery(created), ok('image.created', 'onAny')),
  step('image.deleted, signed', delivery(createTestEvent('image.deleted')), ok('image.deleted', 'onAny')),
  step('api_key.revoked, signed', delivery(createTestEvent('api_key.revoked')), ok('api_key.revoked', 'onAny')),
  step('quota.warned, signed', delivery(createTestEvent('quota.warned')), ok('quota.*', 'onAny')),
  step('quota.exceeded, signed', delivery(createTestEvent('quota.exceeded')), ok('quota.*', 'onAny')),
  step('image.resized (unknown type), signed', delivery(createTestEvent('image.resized')), ok('onAny')),
  step('duplicate of row 1', delivery(created), ok()),
  step(
    'tampered body (changed after signing)',
    delivery(createTestEvent('image.created'), {
      change: (r) => {
        r.body = r.body.replace('"bytes":482113', '"bytes":1');
      },
    }),
    fail(400, 'SIGNATURE_MISMATCH'),
  ),
  step(
    'signed with a wrong secret',
    delivery(createTestEvent('image.created'), { secret: 'whsec_not_this_endpoint' }),
    fail(400, 'SIGNATURE_MISMATCH'),
  ),
  step(
    'stale timestamp (signed 1 hour ago)',
    delivery(createTestEvent('image.created'), { timestamp: now() - 3600 }),
    fail(400, 'TIMESTAMP_OUT_OF_TOLERANCE'),
  ),
  step(
    'no X-Service-Signature header',
    delivery(createTestEvent('image.created'), {
      change: (r) => {
        delete r.headers['x-service-signature'];
      },
    }),
    fail(400, 'MISSING_SIGNATURE'),
  ),
  step(
    'X-Service-Event ≠ body type',
    delivery(createTestEvent('image.created'), {
      change: (r) => {
        r.headers['x-service-event'] = 'quota.exceeded';
      },
    }),
    fail(400, 'EVENT_TYPE_MISMATCH'),
  ),
  step(
    'GET instead of POST',
    delivery(createTestEvent('image.created'), {
      change: (r) => {
        r.method = 'GET';
        r.body = undefined;
      },
    }),
    fail(405, 'METHOD_NOT_ALLOWED'),
  ),
  step('signed body over 1 MiB', delivery(big), fail(413, 'PAYLOAD_TOO_LARGE')),
  step('handler throws (image.deleted)', delivery(flaky), fail(500, 'HANDLER_FAILED', 'image.deleted (threw)')),
  step('the service retries it', delivery(flaky), ok('image.deleted', 'onAny')),
  async ({ send, demo }) => {
    const first = send(delivery(slow));
    // Wait until the first delivery's handler runs (or the first answer, if something is wrong).
    await Promise.race([demo.held, first]);
    let second;
    try {
      second = await send(delivery(slow));
    } finally {
      demo.release();
    }
    return [
      { label: 'slow handler (image.created)', expected: ok('image.created', 'onAny'), actual: await first },
      { label: 'same event while the first runs', expected: fail(409, 'IN_FLIGHT'), actual: second },
    ];
  },
];
