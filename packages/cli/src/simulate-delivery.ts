import { setTimeout as sleep } from 'node:timers/promises';
import type { WebhookEvent } from '@pixhook/core';
import { createSignedRequest, type SignedRequest } from '@pixhook/core/testing';
import { type AttemptOutcome, deliver } from './deliver.js';
import { DEFAULT_DEADLINE_SECONDS, DEFAULT_MAX_ATTEMPTS, retryDelays } from './schedule.js';

/** Options of `simulateDelivery`. */
export interface SimulateOptions {
  /** The receiver's URL. */
  url: string;
  /** The endpoint's signing secret. */
  secret: string;
  /** The event to deliver; every attempt sends the same bytes. */
  event: WebhookEvent<string, object>;
  /** The X-Service-Delivery header, the same on every attempt; @default a random UUID */
  deliveryId?: string;
  /** Attempts in all, the first included; @default 7 (the first attempt and six retries) */
  maxAttempts?: number;
  /** Divides every retry delay: 3600 makes an hour a second; @default 1 (real time) */
  timeScale?: number;
  /** Seconds each attempt has to answer 2xx; not scaled by `timeScale`; @default 10 */
  deadlineSeconds?: number;
  /** Told when an attempt starts, when it ends, and when a retry is scheduled. */
  onProgress?: (update: SimulationUpdate) => void;
}

/** Progress of a simulation, as `onProgress` receives it. */
export type SimulationUpdate =
  | { kind: 'attempt'; attempt: number; maxAttempts: number; request: SignedRequest }
  | { kind: 'result'; attempt: number; maxAttempts: number; outcome: AttemptOutcome; request: SignedRequest }
  | { kind: 'wait'; nextAttempt: number; maxAttempts: number; delaySeconds: number; realMs: number };

/** One attempt of a simulated delivery. */
export interface AttemptRecord extends AttemptOutcome {
  /** 1 for the first attempt. */
  attempt: number;
  /** When it was sent (real clock), ISO 8601. */
  sentAt: string;
  /** The schedule's delay before it, in service seconds (0 for the first attempt). */
  delaySeconds: number;
}

/** How a simulated delivery ended. */
export interface SimulationResult {
  /** `delivered` after a 2xx in time; `auto-disabled` when the last attempt failed too. */
  state: 'delivered' | 'auto-disabled';
  eventId: string;
  deliveryId: string;
  attempts: AttemptRecord[];
}

/**
 * Plays the service's delivery state machine (spec parts 3, 7 and 8) against a receiver: an
 * attempt with a deadline, then on failure a retry after each delay of the schedule, until a 2xx
 * (`delivered`) or until the last attempt fails (`auto-disabled`: the service would disable the
 * endpoint and email its owner). Every attempt is the same delivery: same event, same body bytes,
 * same X-Service-Delivery, re-signed with a fresh timestamp as a real retry is.
 *
 * @example
 * const result = await simulateDelivery({ url, secret, event: createTestEvent('image.created'), timeScale: 3600 })
 * result.state // 'delivered' | 'auto-disabled'
 */
export async function simulateDelivery(options: SimulateOptions): Promise<SimulationResult> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const timeScale = options.timeScale ?? 1;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new TypeError(
      `pixhook: simulateDelivery() maxAttempts must be a whole number of at least 1, got ${maxAttempts}.`,
    );
  }
  if (!(timeScale > 0) || !Number.isFinite(timeScale)) {
    throw new TypeError(`pixhook: simulateDelivery() timeScale must be a positive number, got ${timeScale}.`);
  }
  const deadlineSeconds = options.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS;
  if (!(deadlineSeconds > 0) || !Number.isFinite(deadlineSeconds)) {
    throw new TypeError(
      `pixhook: simulateDelivery() deadlineSeconds must be a positive number, got ${deadlineSeconds}.`,
    );
  }
  const deliveryId = options.deliveryId ?? globalThis.crypto.randomUUID();
  const delays = retryDelays(maxAttempts);
  const progress = options.onProgress ?? (() => {});
  const attempts: AttemptRecord[] = [];

  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const delaySeconds = attempt === 1 ? 0 : (delays[attempt - 2] as number);
    if (delaySeconds > 0) {
      const realMs = (delaySeconds * 1_000) / timeScale;
      progress({ kind: 'wait', nextAttempt: attempt, maxAttempts, delaySeconds, realMs });
      await sleep(realMs);
    }
    // Signed now, not when the delivery was created: a retry carries a fresh timestamp.
    const request = createSignedRequest(options.event, { secret: options.secret, deliveryId });
    const { body, headers } = request;
    progress({ kind: 'attempt', attempt, maxAttempts, request });
    const sentAt = new Date().toISOString();
    const outcome = await deliver({ url: options.url, body, headers, deadlineSeconds });
    attempts.push({ attempt, sentAt, delaySeconds, ...outcome });
    progress({ kind: 'result', attempt, maxAttempts, outcome, request });
    if (outcome.ok) return { state: 'delivered', eventId: options.event.id, deliveryId, attempts };
  }
  return { state: 'auto-disabled', eventId: options.event.id, deliveryId, attempts };
}
