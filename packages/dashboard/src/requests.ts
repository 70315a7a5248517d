import { receiverUrlProblem, secretProblem } from '@pixhook/cli';
import { ActionError, MAX_SCHEDULE_ATTEMPTS } from './actions.js';
import type { EndpointRequest, ReplayRequest, ScheduleRequest, SendRequest } from './protocol.js';

/**
 * The page's requests, checked: the API trusts nothing it is sent, and says what is wrong in a
 * 400 rather than sending a delivery the user did not mean.
 */

type Json = Record<string, unknown>;

function invalid(message: string): ActionError {
  return new ActionError(400, 'INVALID_REQUEST', message);
}

function object(value: unknown, what: string): Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`${what} must be a JSON object.`);
  return value as Json;
}

function text(value: unknown, what: string, max = 2_048): string {
  if (typeof value !== 'string' || value === '' || value.length > max) {
    throw invalid(`${what} must be a non-empty string of at most ${max} characters.`);
  }
  return value;
}

function number(value: unknown, what: string, check: (n: number) => boolean, expected: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !check(value)) {
    throw invalid(`${what} must be ${expected}.`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, what: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw invalid(`${what} must be one of ${allowed.join(', ')}.`);
  return value as T;
}

export function endpointRequest(body: unknown): EndpointRequest {
  const json = object(body, 'The request');
  const given = text(json.url, 'The receiver URL');
  const problem = receiverUrlProblem(given);
  if (problem) throw invalid(`The receiver URL: ${problem}`);
  const url = new URL(given).href;
  if (json.secret === undefined || json.secret === '') return { url };
  const secret = text(json.secret, 'The signing secret', 1_024);
  const secretIssue = secretProblem(secret);
  if (secretIssue) throw invalid(secretIssue);
  return { url, secret };
}

export function sendRequest(body: unknown): SendRequest {
  const json = object(body, 'The request');
  const mode = oneOf(json.mode ?? 'once', 'mode', ['once', 'twice', 'stale'] as const);
  return {
    type: text(json.type, 'The event type', 200),
    object: object(json.object, 'data.object'),
    mode,
    ...(json.ageSeconds === undefined
      ? {}
      : {
          ageSeconds: number(
            json.ageSeconds,
            'Stale by',
            (n) => Number.isInteger(n) && Math.abs(n) <= 315_360_000,
            'a whole number of seconds (negative: in the future)',
          ),
        }),
  };
}

export function replayRequest(body: unknown): ReplayRequest {
  const json = object(body, 'The request');
  const mode = oneOf(json.mode, 'mode', ['as-is', 're-signed', 'edited'] as const);
  return {
    attemptId: text(json.attemptId, 'attemptId', 40),
    mode,
    ...(mode === 'edited' ? { body: text(json.body, 'The edited body', 1_048_576) } : {}),
  };
}

export function scheduleRequest(body: unknown): ScheduleRequest {
  const json = object(body, 'The request');
  return {
    type: text(json.type, 'The event type', 200),
    ...(json.object === undefined ? {} : { object: object(json.object, 'data.object') }),
    timeScale: number(json.timeScale, 'Time scale', (n) => n > 0, 'a positive number'),
    maxAttempts: number(
      json.maxAttempts,
      'Max attempts',
      (n) => Number.isInteger(n) && n >= 1 && n <= MAX_SCHEDULE_ATTEMPTS,
      `a whole number from 1 to ${MAX_SCHEDULE_ATTEMPTS}`,
    ),
    deadlineSeconds: number(json.deadlineSeconds, 'Deadline', (n) => n > 0 && n <= 60, 'from 0 to 60 seconds'),
  };
}
