// Attribute names (OpenTelemetry semantic conventions where one exists, `pixhook.*` otherwise) and
// how values read from pixhook's messages become attribute values.
import { isWebhookVerificationError } from '@pixhook/core';

export const ATTR = {
  eventType: 'pixhook.event.type',
  eventId: 'pixhook.event.id',
  deliveryId: 'pixhook.delivery.id',
  outcome: 'pixhook.outcome',
  mode: 'pixhook.mode',
  secretIndex: 'pixhook.secret.index',
  attempt: 'pixhook.delivery.attempt',
  verifyDuration: 'pixhook.verify.duration',
  verified: 'pixhook.verified',
  lastChance: 'pixhook.last_chance',
  handlerIndex: 'pixhook.handler.index',
  handlerOutcome: 'pixhook.handler.outcome',
  handlerSkipped: 'pixhook.handler.skipped',
  skipReason: 'pixhook.skip.reason',
  queued: 'pixhook.queued',
  jobAttempt: 'pixhook.job.attempt',
  jobMaxAttempts: 'pixhook.job.max_attempts',
  jobOutcome: 'pixhook.job.outcome',
  queueState: 'pixhook.queue.state',
  transactionResult: 'pixhook.transaction.result',
  statusCode: 'http.response.status_code',
  errorType: 'error.type',
  functionName: 'code.function.name',
  messagingSystem: 'messaging.system',
  messagingOperation: 'messaging.operation.type',
  messagingDestination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
} as const;

/** The longest text kept from a value pixhook did not verify (the delivery id header, a queue's name). */
export const MAX_UNTRUSTED_CHARACTERS = 128;

/** `value` if it is a string, cut to `max` characters; undefined otherwise. */
export function text(value: unknown, max = MAX_UNTRUSTED_CHARACTERS): string | undefined {
  if (typeof value !== 'string') return undefined;
  return value.length > max ? value.slice(0, max) : value;
}

/** `value` if it is a finite number; undefined otherwise. */
export function number(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]{0,63}$/;

/**
 * The `error.type` of a value a handler threw: its constructor's name (`TypeError`), or `_OTHER`
 * (the semantic conventions' fallback). Never its message or stack: those are the application's
 * data and may repeat the body.
 */
export function errorType(error: unknown): string {
  try {
    if (typeof error !== 'object' || error === null) return '_OTHER';
    const name = (error as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && IDENTIFIER.test(name) ? name : '_OTHER';
  } catch {
    // A hostile getter.
    return '_OTHER';
  }
}

/** The code of a pixhook error (`QUEUE_UNAVAILABLE`), or `fallback` for anything else. */
export function errorCode(error: unknown, fallback: string): string {
  try {
    if (!isWebhookVerificationError(error)) return fallback;
    return /^[A-Z_]{1,64}$/.test(error.code) ? error.code : fallback;
  } catch {
    return fallback;
  }
}
