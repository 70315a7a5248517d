import { type AttemptEstimate, SERVICE_ATTEMPTS } from './retry-schedule.js';

/** Every error code pixhook answers with, and the HTTP status each one maps to. */
export const ERROR_STATUS = {
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  BODY_TIMEOUT: 408,
  BODY_UNREADABLE: 400,
  MISSING_SIGNATURE: 400,
  MALFORMED_SIGNATURE: 400,
  TIMESTAMP_OUT_OF_TOLERANCE: 400,
  SIGNATURE_MISMATCH: 400,
  INVALID_JSON: 400,
  INVALID_EVENT: 400,
  EVENT_TYPE_MISMATCH: 400,
  MISSING_HEADER: 400,
  IN_FLIGHT: 409,
  HANDLER_FAILED: 500,
  RAW_BODY_UNAVAILABLE: 500,
  STORE_UNAVAILABLE: 503,
  /**
   * Secrets per tenant (`secret` as a function): the tenant's secret could not be looked up (the
   * lookup failed, or answered something that is not secrets); nothing was verified, so the service
   * retries.
   */
  SECRET_UNAVAILABLE: 503,
  HANDLER_TIMEOUT: 503,
  /**
   * Never an answer: told to `onError` only, when a run's handlers had not settled after
   * `maxClaimMs` and its claim was released so that a retry can run the event (they may still run).
   */
  CLAIM_RELEASED: 503,
  /** Queued mode: the queue did not confirm the write in time, or failed; nothing was acknowledged. */
  QUEUE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
  /** Never an answer: told to `onError` only, when the store forgot ids before their TTL. */
  DUPLICATE_WINDOW_SHORTENED: 200,
  /**
   * Never an answer: told to `onError` only, when a queue worker lost a job it was running (the
   * process died, or blocked its event loop past the job's lock) and the job runs again or fails.
   */
  JOB_STALLED: 500,
  /**
   * Never an answer: told to `onError` only (and logged even when `onError` listeners exist), the
   * last-chance alarm: pixhook answered anything but 2xx to what is probably one of the service's
   * last two attempts of a delivery, so one more failure auto-disables the endpoint.
   */
  ENDPOINT_AT_RISK: 500,
  /**
   * Never an answer: told to `onError` only, when the `archive` could not record a verified
   * delivery or a job's run in time (it failed, or took longer than its `writeTimeoutMs`). The
   * event was answered and processed as it would have been without an archive.
   */
  ARCHIVE_FAILED: 500,
  /**
   * Never an answer: told to `onError` only (logged as a warning when nobody listens), when a
   * verified event's `data.object` failed the `schema` a handler was registered with: that handler
   * did not run, and the event was acknowledged (in a queue worker: its job became a dead letter).
   * The error's `cause` is a `SchemaMismatchError` holding the validator's issues.
   */
  SCHEMA_MISMATCH: 200,
  /**
   * Never an answer: told to `onError` only, when the ordering guard skipped a handler because a
   * newer event with the same ordering key was seen before (the event was acknowledged). Not logged
   * when nobody listens: it is the guard doing its work.
   */
  STALE_EVENT: 200,
} as const;

/** A pixhook error code, e.g. `'SIGNATURE_MISMATCH'`. */
export type WebhookErrorCode = keyof typeof ERROR_STATUS;

/**
 * The one error class of pixhook: a rejected request or a failed step, with a `code` from the
 * contract's table, the HTTP `status` pixhook answers with, and an optional `cause`.
 * Messages are meant for people and never contain a secret or an expected signature.
 *
 * @example
 * try { webhooks.verify(rawBody, headers) }
 * catch (error) { if (isWebhookVerificationError(error)) console.log(error.code, error.status) }
 */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly code: WebhookErrorCode;
  readonly status: number;

  constructor(code: WebhookErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.status = ERROR_STATUS[code];
  }

  /** The JSON body pixhook answers with: `{"error":{"code","message"}}`. */
  toJSON(): { error: { code: WebhookErrorCode; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

/**
 * True for a `WebhookVerificationError`, recognised by `name` and `code` so that two copies of
 * `@pixhook/core` (an ESM and a CJS one, say) still understand each other's errors.
 *
 * @example
 * if (isWebhookVerificationError(error) && error.code === 'TIMESTAMP_OUT_OF_TOLERANCE') { … }
 */
export function isWebhookVerificationError(value: unknown): value is WebhookVerificationError {
  if (value instanceof WebhookVerificationError) return true;
  if (typeof value !== 'object' || value === null) return false;
  const { name, code } = value as { name?: unknown; code?: unknown };
  return name === 'WebhookVerificationError' && typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code);
}

/** When, from now, `ms` ahead, for people, to the minute: `in about 3 min`, `in about 23 h 59 min`, `within a minute`. */
function inAbout(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'within a minute';
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return `in about ${hours === 0 ? `${minutes} min` : rest === 0 ? `${hours} h` : `${hours} h ${rest} min`}`;
}

/**
 * The last-chance alarm (`ENDPOINT_AT_RISK`) for an answer of `status` to `estimate`'s attempt of
 * event `id` of `type`, at `nowMs`: how much time is left, and what to do.
 */
export function endpointAtRisk(
  type: string,
  id: string,
  status: number,
  estimate: AttemptEstimate,
  nowMs: number,
): WebhookVerificationError {
  const { attempt, attemptsLeft, nextAttemptAt } = estimate;
  const what = `pixhook answered ${status} to what is probably attempt ${attempt} of ${SERVICE_ATTEMPTS} of event ${id} (${type})`;
  const message =
    attemptsLeft === 0 || nextAttemptAt === undefined
      ? `${what}, the service's last: it now auto-disables this endpoint and emails the account owner, and sends nothing more until the endpoint is enabled again. Fix the cause (the error reported before this one), enable the endpoint again in the service's dashboard, and replay the events that failed.`
      : `${what}: the service tries once more, ${inAbout(nextAttemptAt * 1000 - nowMs)}, and if that attempt fails too it auto-disables this endpoint. Fix the cause (the error reported before this one) before then.`;
  return new WebhookVerificationError('ENDPOINT_AT_RISK', message);
}

/** The 413 error for a body above `maxBodyBytes`. */
export function payloadTooLarge(limit: number): WebhookVerificationError {
  return new WebhookVerificationError(
    'PAYLOAD_TOO_LARGE',
    `The body is larger than maxBodyBytes (${limit} bytes); raise maxBodyBytes if the service really sends such events.`,
  );
}

/** The 408 error for a body that did not arrive within `bodyTimeoutMs` (or `deliveryTimeoutMs`, if shorter). */
export function bodyTimeout(timeoutMs: number): WebhookVerificationError {
  return new WebhookVerificationError(
    'BODY_TIMEOUT',
    `The request body did not arrive within ${timeoutMs} ms (bodyTimeoutMs, or deliveryTimeoutMs when shorter); the service sends whole bodies at once, so the connection was closed.`,
  );
}
