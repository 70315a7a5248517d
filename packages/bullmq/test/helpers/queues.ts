/** Queues, receivers and workers on a real redis-server, with test-sized delays. */

import { BullMQQueue, type BullMQQueueOptions } from '@pixhook/bullmq';
import { type AnyEvent, type HandlerContext, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';

export const SECRET = 'whsec_bullmq_tests_7a8b9c';

/** A queue name no other test uses, so tests sharing one server never see each other's jobs. */
export function uniqueName(label = 'test'): string {
  return `pixhook-test-${label}-${globalThis.crypto.randomUUID().slice(0, 8)}`;
}

/** Queue options for tests: short backoff, quick reconnection after Redis comes back. */
export function testQueueOptions(port: number, options: Partial<BullMQQueueOptions> = {}): BullMQQueueOptions {
  return {
    connection: { host: '127.0.0.1', port, retryStrategy: () => 50 },
    name: uniqueName(),
    attempts: 3,
    backoff: { type: 'exponential', delayMs: 50 },
    ...options,
  };
}

/** One handler run, as a worker saw it. */
export interface Run {
  eventId: string;
  type: string;
  context: HandlerContext;
  at: number;
}

/**
 * A queue and the `Webhooks` given it, with a handler on every event that records each run and
 * then does what `act` says (throw, wait…), and every `onError`.
 */
export function queuedWebhooks(
  options: BullMQQueueOptions,
  act: (event: AnyEvent, context: HandlerContext, run: number) => unknown = () => {},
) {
  const queue = new BullMQQueue(options);
  const webhooks = new Webhooks({ secret: SECRET, queue });
  const runs: Run[] = [];
  const errors: { error: WebhookVerificationError; attempt?: number }[] = [];
  webhooks.onAny((event, context) => {
    runs.push({ eventId: event.id, type: event.type, context, at: performance.now() });
    return act(event, context, runs.filter((run) => run.eventId === event.id).length);
  });
  webhooks.onError((error, context) => void errors.push({ error, attempt: context.job?.attempt }));
  return { queue, webhooks, runs, errors };
}

/** A signed delivery of a fresh event (or of `event`). */
export function signed(event: AnyEvent = createTestEvent('image.created') as AnyEvent) {
  const { headers, body } = createSignedRequest(event, { secret: SECRET });
  return { method: 'POST', headers, body, event };
}

/** Waits until `check()` is true, polling; throws with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
