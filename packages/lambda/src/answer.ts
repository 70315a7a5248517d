import type { WebhookResponse } from '@pixhook/core';
import type { AnswerShape } from './read-event.js';
import type { LambdaAlbResult, LambdaHttpResult } from './types.js';

/** Reason phrases for ALB's statusDescription, for every status pixhook answers with. */
const REASONS: Record<number, string> = {
  200: 'OK',
  202: 'Accepted',
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * Core's answer in the shape the event's source expects. `connection` is left out: API Gateway,
 * Function URLs and ALB own the client's connection (API Gateway would pass it on renamed
 * `x-amzn-Remapped-Connection`), and the body it is about has already been read in full.
 */
export function toResult(shape: AnswerShape, response: WebhookResponse): LambdaHttpResult {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) if (name !== 'connection') headers[name] = value;
  const { status: statusCode, body } = response;
  if (shape === 'proxy') return { statusCode, headers, body, isBase64Encoded: false };
  const statusDescription = REASONS[statusCode] ? `${statusCode} ${REASONS[statusCode]}` : String(statusCode);
  if (shape === 'alb') return { statusCode, statusDescription, headers, body, isBase64Encoded: false };
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) multiValueHeaders[name] = [value];
  return { statusCode, statusDescription, multiValueHeaders, body, isBase64Encoded: false } satisfies LambdaAlbResult;
}
