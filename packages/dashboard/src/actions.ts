import {
  type AttemptOutcome,
  deliver,
  errorCode,
  explainCode,
  outcomeHint,
  retryDelays,
  sentHeaders,
  simulateDelivery,
} from '@pixhook/cli';
import { parseSignatureHeader, sign, type WebhookEvent } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import type {
  AttemptEntry,
  AttemptOrigin,
  ReplayRequest,
  ScheduleRequest,
  ScheduleRun,
  SendRequest,
} from './protocol.js';
import type { DashboardState } from './state.js';

/** A request the dashboard refuses, with the status and code its API answers. */
export class ActionError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The most attempts a schedule may play: the spec's 7, and room to try a longer one. */
export const MAX_SCHEDULE_ATTEMPTS = 20;

/** One attempt to make: what to send, and what the log says about it. */
interface Delivery {
  origin: AttemptOrigin;
  url: string;
  body: string;
  /** The delivery headers (content-type and the three X-Service ones). */
  headers: Record<string, string>;
  eventType: string;
  eventId: string;
  replayOf?: string;
  runId?: string;
  attemptNumber?: number;
}

/** The URL and secret to deliver with, or why the service would not deliver now. */
function target(state: DashboardState): { url: string; secret: string } {
  const { url, secret } = state;
  if (url === undefined || secret === undefined) {
    throw new ActionError(
      400,
      'ENDPOINT_INCOMPLETE',
      'Enter the receiver URL and the signing secret under Endpoint first.',
    );
  }
  if (state.disabled) {
    throw new ActionError(
      409,
      'ENDPOINT_DISABLED',
      'The endpoint is auto-disabled: the service delivers nothing to it until it is enabled again.',
    );
  }
  return { url, secret };
}

/** `POST /api/send`: a test event, once, twice at once, or signed as if sent `ageSeconds` ago. */
export async function sendTestEvent(state: DashboardState, request: SendRequest): Promise<AttemptEntry[]> {
  const { url, secret } = target(state);
  const stale = request.mode === 'stale';
  const age = request.ageSeconds ?? state.snapshot().defaults.staleAgeSeconds;
  const timestamp = stale ? Math.floor(Date.now() / 1000) - age : undefined;
  // A stale delivery's envelope says the same time as its signature, as the CLI's --age does.
  const event = createTestEvent(request.type, request.object, timestamp === undefined ? {} : { created: timestamp });
  const signed = createSignedRequest(event, { secret, ...(timestamp === undefined ? {} : { timestamp }) });
  const origin: AttemptOrigin = stale ? 'send-stale' : request.mode === 'twice' ? 'send-twice' : 'test-event';
  const delivery: Delivery = { origin, url, ...signed, eventType: event.type, eventId: event.id };
  // Twice at once: the same bytes and headers, both on the wire before either is answered.
  const copies = request.mode === 'twice' ? [delivery, delivery] : [delivery];
  return Promise.all(copies.map((copy) => attempt(state, copy)));
}

/**
 * `POST /api/replay`: a logged attempt again, to the endpoint's current URL. `as-is` sends the
 * same bytes and headers (the signature's timestamp ages); `re-signed` signs the same body now and
 * keeps the delivery id, as the service's retries do; `edited` signs a new body now, with a new
 * delivery id: it is another delivery.
 */
export async function replay(state: DashboardState, request: ReplayRequest): Promise<AttemptEntry> {
  const original = state.attempt(request.attemptId);
  if (original === undefined) {
    throw new ActionError(404, 'NO_SUCH_ATTEMPT', `There is no attempt ${request.attemptId} in the log (any more).`);
  }
  const { url, secret } = target(state);
  const headers = deliveryHeaders(original.request.headers);
  const common = { url, replayOf: original.id, eventType: original.eventType, eventId: original.eventId };
  if (request.mode === 'as-is') {
    return attempt(state, { ...common, origin: 'replay-as-is', body: original.request.body, headers });
  }
  if (request.mode === 're-signed') {
    const body = original.request.body;
    return attempt(state, {
      ...common,
      origin: 'replay-re-signed',
      body,
      headers: { ...headers, 'x-service-signature': sign(secret, body) },
    });
  }
  const edited = parseObject(request.body);
  // The service sends compact JSON; the edited envelope is signed as it would send it.
  const signed = createSignedRequest(edited as unknown as WebhookEvent<string, object>, { secret });
  return attempt(state, {
    ...common,
    origin: 'replay-edited',
    ...signed,
    headers: {
      ...signed.headers,
      'x-service-event': typeof edited.type === 'string' ? edited.type : original.eventType,
    },
    eventType: typeof edited.type === 'string' ? edited.type : original.eventType,
    eventId: typeof edited.id === 'string' ? edited.id : original.eventId,
  });
}

/**
 * `POST /api/schedule`: the service's retry schedule, played by the CLI's `simulateDelivery`
 * against the endpoint with a new event. Answers the run at once; its steps change as it plays, and
 * an auto-disabled outcome disables the endpoint.
 */
export function playSchedule(state: DashboardState, request: ScheduleRequest): ScheduleRun {
  const { url, secret } = target(state);
  if (state.running) {
    throw new ActionError(409, 'SCHEDULE_RUNNING', 'A retry schedule is playing already: wait for its outcome.');
  }
  const event = createTestEvent(request.type, request.object);
  const deliveryId = globalThis.crypto.randomUUID();
  const run: ScheduleRun = {
    id: state.newId('r'),
    startedAt: new Date().toISOString(),
    eventType: event.type,
    eventId: event.id,
    deliveryId,
    timeScale: request.timeScale,
    maxAttempts: request.maxAttempts,
    deadlineSeconds: request.deadlineSeconds,
    state: 'running',
    steps: [0, ...retryDelays(request.maxAttempts)].map((delaySeconds, index) => ({
      attempt: index + 1,
      delaySeconds,
      realMs: (delaySeconds * 1_000) / request.timeScale,
      state: 'pending',
    })),
  };
  state.putRun(run);
  const sentAt = new Map<number, string>();
  simulateDelivery({
    url,
    secret,
    event,
    deliveryId,
    maxAttempts: request.maxAttempts,
    timeScale: request.timeScale,
    deadlineSeconds: request.deadlineSeconds,
    onProgress: (update) => {
      if (update.kind === 'wait') {
        step(run, update.nextAttempt).state = 'waiting';
      } else if (update.kind === 'attempt') {
        sentAt.set(update.attempt, new Date().toISOString());
        step(run, update.attempt).state = 'sending';
      } else {
        const entry = record(
          state,
          {
            origin: 'schedule',
            url,
            ...update.request,
            eventType: event.type,
            eventId: event.id,
            runId: run.id,
            attemptNumber: update.attempt,
          },
          update.outcome,
          sentAt.get(update.attempt) ?? new Date().toISOString(),
        );
        Object.assign(step(run, update.attempt), {
          state: entry.ok ? 'ok' : 'failed',
          attemptId: entry.id,
          ...(entry.answer ? { status: entry.answer.status } : {}),
          ...(entry.code ? { code: entry.code } : {}),
          ...(entry.failure ? { failure: entry.failure } : {}),
        });
      }
      state.putRun(run);
    },
  }).then(
    (result) => {
      run.state = result.state;
      // Attempts after a 2xx never happen: the timeline ends with the one that delivered.
      run.steps = run.steps.slice(0, result.attempts.length);
      state.putRun(run);
      if (result.state === 'auto-disabled') state.autoDisable();
    },
    () => {
      run.state = 'stopped';
      state.putRun(run);
    },
  );
  return run;
}

function step(run: ScheduleRun, attemptNumber: number) {
  return run.steps[attemptNumber - 1] as ScheduleRun['steps'][number];
}

async function attempt(state: DashboardState, delivery: Delivery): Promise<AttemptEntry> {
  const time = new Date().toISOString();
  const outcome = await deliver({ url: delivery.url, body: delivery.body, headers: delivery.headers });
  return record(state, delivery, outcome, time);
}

/** The log entry of an attempt: what was sent, what came back, and what a failure means. */
function record(state: DashboardState, delivery: Delivery, outcome: AttemptOutcome, time: string): AttemptEntry {
  const { origin, url, body, headers, eventType, eventId, replayOf, runId, attemptNumber } = delivery;
  const answer = outcome.status === undefined ? undefined : parseAnswer(outcome.body);
  const code = errorCode(outcome.body);
  const hint = outcomeHint(outcome, url);
  const explanation = explainCode(code);
  const entry: AttemptEntry = {
    id: state.newId('a'),
    time,
    origin,
    ...(replayOf === undefined ? {} : { replayOf }),
    ...(runId === undefined ? {} : { runId, attemptNumber }),
    eventType,
    eventId,
    deliveryId: headers['x-service-delivery'] ?? '',
    signedAt: signedAt(headers['x-service-signature']),
    request: { url, headers: sentHeaders({ body, headers }), body },
    ...(outcome.status === undefined
      ? {}
      : {
          answer: {
            status: outcome.status,
            headers: outcome.headers ?? {},
            body: outcome.body ?? '',
            ...(outcome.truncated ? { truncated: true } : {}),
            ...(outcome.moreBytes === undefined ? {} : { moreBytes: outcome.moreBytes }),
          },
        }),
    ms: Math.round(outcome.ms),
    ok: outcome.ok,
    ...(outcome.ok && answer?.duplicate === true ? { duplicate: true } : {}),
    ...(outcome.failure ? { failure: outcome.failure } : {}),
    ...(outcome.detail ? { detail: outcome.detail } : {}),
    ...(code ? { code } : {}),
    ...(typeof answer?.error?.message === 'string' ? { message: answer.error.message } : {}),
    ...(explanation ? { explanation } : {}),
    ...(hint ? { hint } : {}),
  };
  state.addAttempt(entry);
  return entry;
}

/** The four delivery headers of a logged request, without what `deliver` adds itself. */
function deliveryHeaders(sent: Record<string, string>): Record<string, string> {
  const { 'content-length': _length, 'user-agent': _agent, ...headers } = sent;
  return headers;
}

/** The signature's t; the dashboard signs every header it sends, so it parses. */
function signedAt(header: string | undefined): number {
  return parseSignatureHeader(header ?? '').timestamp;
}

function parseAnswer(body: string | undefined): { duplicate?: unknown; error?: { message?: unknown } } | undefined {
  try {
    const value: unknown = JSON.parse(body ?? '');
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

/** An edited body: a JSON object, or a 400 saying why not. */
function parseObject(text: string | undefined): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text ?? '');
  } catch (error) {
    throw new ActionError(400, 'INVALID_BODY', `The edited body is not JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ActionError(400, 'INVALID_BODY', 'The edited body must be a JSON object (an event envelope).');
  }
  return value as Record<string, unknown>;
}
