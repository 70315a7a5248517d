import type { Outcome } from '../modes/outcome.js';
import type { WebhookErrorCode, WebhookVerificationError } from '../protocol/errors.js';
import { deliveryChannel } from '../seams/diagnostics.js';
import type { WebhookResponse } from '../seams/handle-input.js';
import { refusedUnread } from './admit.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const DUPLICATE_BODY = '{"received":true,"duplicate":true}';

/** The code each refusal answered with, kept while `pixhook:delivery` has subscribers (its trace reads it). */
const answeredCodes = new WeakMap<WebhookResponse, WebhookErrorCode>();

/** The error code `response` answered with, when a trace was listening as it was made. */
export function answeredCode(response: WebhookResponse): WebhookErrorCode | undefined {
  return answeredCodes.get(response);
}

/** True for the answer to a delivery handled before (`ok(true)`). */
export function isDuplicateAnswer(response: WebhookResponse): boolean {
  return response.body === DUPLICATE_BODY;
}

/** 200 for a delivery handled now, or one handled before (`duplicate`). */
export function ok(duplicate: boolean): WebhookResponse {
  return {
    status: 200,
    headers: { 'content-type': JSON_TYPE },
    body: duplicate ? DUPLICATE_BODY : '{"received":true}',
  };
}

/** 202 for a delivery written to the queue (queued mode): its handlers run later, on a worker. */
export function accepted(): WebhookResponse {
  return { status: 202, headers: { 'content-type': JSON_TYPE }, body: '{"received":true,"queued":true}' };
}

/** The error's status and JSON body; `Allow: POST` with a 405. */
export function answer(error: WebhookVerificationError): WebhookResponse {
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  if (error.code === 'METHOD_NOT_ALLOWED') headers.allow = 'POST';
  // The rest of a body that came too slowly may never come, and one refused by its Content-Length
  // was never read: do not wait for either on this connection.
  if (error.code === 'BODY_TIMEOUT' || refusedUnread(error)) headers.connection = 'close';
  const response = { status: error.status, headers, body: JSON.stringify(error.toJSON()) };
  if (deliveryChannel.hasSubscribers) answeredCodes.set(response, error.code);
  return response;
}

/** The answer to what the mode made of the delivery. */
export function answerOutcome(outcome: Outcome): WebhookResponse {
  return outcome.kind === 'done'
    ? ok(outcome.duplicate)
    : outcome.kind === 'queued'
      ? accepted()
      : answer(outcome.error);
}
