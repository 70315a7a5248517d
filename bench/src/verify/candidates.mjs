// The verifiers compared in process. Each `prepare(body, sent = body)` signs `body` in its own
// scheme (fresh timestamps) and returns `run()`, which verifies `sent` against that signature and
// parses it once, returning the event.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { Webhooks } from '@pixhook/core';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { pixhookHeaders, SECRET, unixNow } from '../payloads.mjs';

const stripe = new Stripe('sk_test_bench_not_a_real_key');
const pixhook = new Webhooks({ secret: SECRET, store: false });
// Standard Webhooks keys are base64 after the whsec_ prefix.
const standardSecret = `whsec_${Buffer.from(SECRET).toString('base64')}`;
const standard = new StandardWebhook(standardSecret);

function pixhookScheme(body) {
  const headers = pixhookHeaders(body);
  const header = headers['x-service-signature'];
  const t = header.slice(2, header.indexOf(','));
  const expected = Buffer.from(header.slice(header.indexOf('v1=') + 3), 'hex');
  return { headers, t, expected };
}

function mismatch() {
  throw new Error('signature mismatch');
}

/** Every candidate, the floor first. `baseline: true` marks what ratios are taken against. */
export const CANDIDATES = [
  {
    id: 'floor',
    label: 'floor: HMAC + timingSafeEqual',
    prepare(signed, body = signed) {
      const { t, expected } = pixhookScheme(signed);
      return () => {
        const mac = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest();
        if (!timingSafeEqual(mac, expected)) mismatch();
        return true;
      };
    },
  },
  {
    id: 'floorParse',
    label: 'floor + JSON.parse',
    prepare(signed, body = signed) {
      const { t, expected } = pixhookScheme(signed);
      return () => {
        const mac = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest();
        if (!timingSafeEqual(mac, expected)) mismatch();
        return JSON.parse(body.toString('utf8'));
      };
    },
  },
  {
    id: 'pixhook',
    label: 'pixhook webhooks.verify',
    prepare(signed, body = signed) {
      const { headers } = pixhookScheme(signed);
      return () => pixhook.verify(body, headers);
    },
  },
  {
    id: 'stripe',
    label: 'stripe webhooks.constructEvent',
    prepare(signed, body = signed) {
      const header = stripe.webhooks.generateTestHeaderString({
        payload: signed.toString('utf8'),
        secret: SECRET,
        timestamp: unixNow(),
      });
      return () => stripe.webhooks.constructEvent(body, header, SECRET);
    },
  },
  {
    id: 'octokit',
    label: '@octokit/webhooks-methods verify + JSON.parse',
    async: true,
    prepare(signed, body = signed) {
      const signature = `sha256=${createHmac('sha256', SECRET).update(signed).digest('hex')}`;
      // Octokit verifies a string, so the bytes are decoded once and parsed from that string.
      return async () => {
        const text = body.toString('utf8');
        if (!(await octokitVerify(SECRET, text, signature))) mismatch();
        return JSON.parse(text);
      };
    },
  },
  {
    id: 'standardwebhooks',
    label: 'standardwebhooks Webhook.verify',
    prepare(signed, body = signed) {
      const msgId = 'msg_bench';
      const now = new Date(unixNow() * 1000);
      const headers = {
        'webhook-id': msgId,
        'webhook-timestamp': String(unixNow()),
        'webhook-signature': standard.sign(msgId, now, signed.toString('utf8')),
      };
      return () => standard.verify(body, headers);
    },
  },
];

/** Checks a candidate once: it must return the event for a good body and throw for a bad one. */
export async function check(candidate, body) {
  const event = await candidate.prepare(body)();
  if (candidate.id !== 'floor' && typeof event?.id !== 'string') {
    throw new Error(`${candidate.id}: verify returned no event`);
  }
  // Same signature, one byte of the body changed: must be rejected.
  const tampered = Buffer.from(body);
  tampered[tampered.length - 2] ^= 1;
  let accepted = false;
  try {
    await candidate.prepare(body, tampered)();
    accepted = true;
  } catch {}
  if (accepted) throw new Error(`${candidate.id}: accepted a tampered body`);
}
