// The verification a user would write by hand, as Stripe's and GitHub's docs show it: parse the
// header, check the timestamp, HMAC the raw bytes, compare in constant time, JSON.parse, dispatch
// through a handler map. No de-duplication and no envelope checks: pixhook does more than this.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SECRET } from '../payloads.mjs';

let handled = 0;

/** The handler every variant runs for a verified event: it counts. */
export function handWrittenHandler() {
  handled++;
}

const handlers = { 'image.created': handWrittenHandler };

/** Verifies and dispatches one delivery; returns an HTTP status. */
export function handWritten(rawBody, headers) {
  const header = headers['x-service-signature'];
  if (typeof header !== 'string') return 400;
  let t;
  let v1;
  for (const part of header.split(',')) {
    const [key, value] = part.split('=');
    if (key === 't') t = value;
    else if (key === 'v1') v1 = value;
  }
  if (!t || !v1 || Math.abs(Date.now() / 1000 - Number(t)) > 300) return 400;
  const expected = createHmac('sha256', SECRET).update(`${t}.`).update(rawBody).digest();
  const received = Buffer.from(v1, 'hex');
  if (received.length !== expected.length || !timingSafeEqual(received, expected)) return 400;
  const event = JSON.parse(rawBody.toString('utf8'));
  handlers[event.type]?.(event);
  return 200;
}

/** How many events the hand-written handler (and Octokit's, which shares it) has run. */
export function handledCount() {
  return handled;
}
