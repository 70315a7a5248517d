import type { WebhookErrorCode } from '@pixhook/core';

/**
 * What each error code a pixhook receiver answers means for a delivery the sender made, and what
 * to check. The receiver's own message says what it saw; this says why it usually happens. The
 * codes that are never answers (told to `onError` only) have no entry.
 */
const EXPLANATIONS: Partial<Record<WebhookErrorCode, string>> = {
  METHOD_NOT_ALLOWED:
    'The receiver answers only POST on this path; the service always POSTs, so this delivery was not made by the service’s rules.',
  PAYLOAD_TOO_LARGE:
    'The body is larger than the receiver’s maxBodyBytes (1 MiB by default): raise maxBodyBytes if events this large are real.',
  BODY_TIMEOUT: 'The body did not arrive whole within the receiver’s bodyTimeoutMs; the service sends bodies at once.',
  BODY_UNREADABLE: 'The receiver could not read the body (the connection broke while it arrived).',
  MISSING_SIGNATURE: 'The request had no X-Service-Signature header, so nothing proves it came from the service.',
  MALFORMED_SIGNATURE:
    'The X-Service-Signature header is not of the form t=<unix seconds>,v1=<64 hex digits>: it was cut, altered or repeated on the way.',
  TIMESTAMP_OUT_OF_TOLERANCE:
    'The signature’s timestamp is further from the receiver’s clock than its tolerance (300 s by default): a stale delivery (a replay) or a clock out of sync. Real retries are re-signed with a fresh timestamp, so they pass.',
  SIGNATURE_MISMATCH:
    'The receiver computed another signature: it verifies with a different secret than the one this delivery was signed with (each endpoint has its own: copy it again from Keys → Webhooks), or something changed the body before verification (a JSON body parser re-serialising it, a trailing newline).',
  INVALID_JSON: 'The signature matches, but the signed body is not JSON.',
  INVALID_EVENT:
    'The signature matches, but the body is not an event envelope: an id starting evt_, a string type, an integer created and an object data.object.',
  EVENT_TYPE_MISMATCH:
    'The X-Service-Event header is missing or differs from the body’s type; the receiver dispatches on the signed type only.',
  MISSING_HEADER: 'The X-Service-Delivery header is missing or empty.',
  IN_FLIGHT:
    'The receiver is still processing this event id from an earlier delivery (two copies arrived at once, or a retry came before the first run ended). It answers 409 so the service retries later; the handlers run once.',
  HANDLER_FAILED:
    'A handler threw or rejected. The event is not marked processed, so the service’s retry will run the handlers again: check the receiver’s onError log.',
  RAW_BODY_UNAVAILABLE:
    'A body parser read the request before pixhook and kept no raw copy, so the signature cannot be checked: mount pixhook’s middleware before the parser (the message says how).',
  STORE_UNAVAILABLE:
    'The receiver’s idempotency store (Redis, Postgres) failed; the handlers did not run, so a retry is safe.',
  SECRET_UNAVAILABLE:
    'The receiver looks up a secret per tenant, and the lookup failed or did not answer in time; nothing was verified, so a retry is safe.',
  HANDLER_TIMEOUT:
    'The handlers did not finish within the receiver’s handlerTimeoutMs, kept under the service’s 10-second deadline; move slow work to a queue.',
  QUEUE_UNAVAILABLE:
    'The receiver’s queue did not confirm the write in time; nothing was acknowledged, so a retry is safe.',
  INTERNAL_ERROR: 'The receiver failed in pixhook itself; its onError log has the cause.',
};

/**
 * What an error code means for the delivery that got it, and what to check; undefined for codes
 * that are not pixhook's answers.
 *
 * @example
 * explainCode('SIGNATURE_MISMATCH') // 'The receiver computed another signature: …'
 */
export function explainCode(code: string | undefined): string | undefined {
  return code !== undefined && Object.hasOwn(EXPLANATIONS, code) ? EXPLANATIONS[code as WebhookErrorCode] : undefined;
}
