import type { DeadLetter, InboxEvent } from '@pixhook/core';

/**
 * What the dashboard's server and its page say to each other: the JSON of `GET /api/state`, of
 * each Server-Sent Event on `GET /api/events`, and of the `POST /api/…` requests. Types and one limit, shared
 * by `server.ts` and the page (`web/`), so both sides are checked against one definition.
 *
 * Everything here that came from a request or an answer (headers, bodies, ids, types, messages) is
 * untrusted text: the page shows it as text, never as markup.
 */

/** Entries each list keeps (log, runs, inspector); older ones are dropped, on the server and the page. */
export const LOG_LIMIT = 500;

/**
 * Characters of answer bodies the delivery log keeps in all (32 MiB): past it, the oldest answers
 * are cut to their first `TRIMMED_ANSWER_CHARS`, on the server and the page, so 500 large answers
 * cannot make the log's snapshot too long a string (or the page too heavy).
 */
export const LOG_ANSWER_BUDGET = 32 * 1_048_576;

/** What an older answer is cut to when the log is over `LOG_ANSWER_BUDGET`. */
export const TRIMMED_ANSWER_CHARS = 16_384;

/**
 * `attempts` (oldest first) with the oldest answers cut to `TRIMMED_ANSWER_CHARS` until their
 * bodies add up to at most `LOG_ANSWER_BUDGET`; the newest answer is never cut. Entries that change
 * are copies; the list is the same one when nothing changes.
 */
export function withinAnswerBudget(attempts: AttemptEntry[]): AttemptEntry[] {
  let total = 0;
  for (const attempt of attempts) total += attempt.answer?.body.length ?? 0;
  if (total <= LOG_ANSWER_BUDGET) return attempts;
  return attempts.map((attempt, index) => {
    const answer = attempt.answer;
    if (total <= LOG_ANSWER_BUDGET || index === attempts.length - 1 || !answer) return attempt;
    if (answer.body.length <= TRIMMED_ANSWER_CHARS) return attempt;
    total -= answer.body.length - TRIMMED_ANSWER_CHARS;
    // Not between the two halves of a surrogate pair.
    const high = answer.body.charCodeAt(TRIMMED_ANSWER_CHARS - 1);
    const end = high >= 0xd800 && high <= 0xdbff ? TRIMMED_ANSWER_CHARS - 1 : TRIMMED_ANSWER_CHARS;
    return { ...attempt, answer: { ...answer, body: answer.body.slice(0, end), trimmed: true } };
  });
}

/** The endpoint as the service sees it. The secret itself never leaves the server. */
export interface EndpointView {
  /** The receiver's URL, once entered. */
  url?: string;
  /** Whether a signing secret is set (its value is never sent to the page). */
  secretSet: boolean;
  /** `auto-disabled` after a delivery's last retry failed (spec part 3), until enabled again. */
  state: 'enabled' | 'auto-disabled';
  /** When it was auto-disabled, ISO 8601. */
  disabledAt?: string;
}

/** A request exactly as the dashboard sent it. */
export interface SentRequest {
  url: string;
  /** Every header sent, lower-case names (the four delivery headers, content-length, user-agent). */
  headers: Record<string, string>;
  /** The exact body that was sent (and, unless edited on purpose, signed). */
  body: string;
}

/** A receiver's answer. */
export interface ReceivedAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body, or its first 1 MiB (`DEFAULT_MAX_ANSWER_BYTES`) when `truncated`. */
  body: string;
  /** The answer was longer than the bound: the rest was not read. */
  truncated?: boolean;
  /** With `truncated`, the bytes not read, when the answer's Content-Length said its size. */
  moreBytes?: number;
  /** An older answer cut to `TRIMMED_ANSWER_CHARS` to keep the log within `LOG_ANSWER_BUDGET`. */
  trimmed?: boolean;
}

/** Why the dashboard made an attempt. */
export type AttemptOrigin =
  | 'test-event'
  | 'send-twice'
  | 'send-stale'
  | 'replay-as-is'
  | 'replay-re-signed'
  | 'replay-edited'
  | 'schedule';

/** One delivery attempt the dashboard made, as the delivery log shows it. */
export interface AttemptEntry {
  /** The log's own id for the attempt (`a1`, `a2`, …): what a replay names. */
  id: string;
  /** When it was sent, ISO 8601. */
  time: string;
  origin: AttemptOrigin;
  /** The attempt this one replays (for `replay-*`). */
  replayOf?: string;
  /** The schedule run it belongs to (for `schedule`), and its number in that run. */
  runId?: string;
  attemptNumber?: number;
  eventType: string;
  eventId: string;
  deliveryId: string;
  /** The signature's `t` (Unix seconds). */
  signedAt: number;
  request: SentRequest;
  /** The answer, when one came back within the deadline. */
  answer?: ReceivedAnswer;
  /** Milliseconds from sending to the end of the answer (or the failure). */
  ms: number;
  /** The spec's success: a 2xx within the deadline. */
  ok: boolean;
  /** A pixhook receiver's 200 for an event it had processed already. */
  duplicate?: boolean;
  /** No answer that counts: the deadline passed, or the connection failed. */
  failure?: 'timeout' | 'network';
  /** The network failure, e.g. `ECONNREFUSED`. */
  detail?: string;
  /** pixhook's error code in the answer, e.g. `SIGNATURE_MISMATCH`. */
  code?: string;
  /** The receiver's own message for it. */
  message?: string;
  /** What the code means for this delivery and what to check, from the CLI's explanations. */
  explanation?: string;
  /** What to check when the answer is not pixhook's (a 404, a refused connection), from the CLI's hints. */
  hint?: string;
}

/** One step of a schedule run's timeline. */
export interface ScheduleStep {
  /** 1 for the first attempt. */
  attempt: number;
  /** The schedule's delay before this attempt, in service seconds (0 for the first). */
  delaySeconds: number;
  /** That delay in real milliseconds, after the time scale. */
  realMs: number;
  state: 'pending' | 'waiting' | 'sending' | 'ok' | 'failed';
  /** The delivery log entry of the attempt, once sent. */
  attemptId?: string;
  status?: number;
  code?: string;
  failure?: 'timeout' | 'network';
}

/** The retry schedule played against the receiver. */
export interface ScheduleRun {
  id: string;
  startedAt: string;
  eventType: string;
  eventId: string;
  deliveryId: string;
  timeScale: number;
  maxAttempts: number;
  deadlineSeconds: number;
  state: 'running' | 'delivered' | 'auto-disabled' | 'stopped';
  steps: ScheduleStep[];
}

/** A likely cause of a failed verification, from `pixhook verify`'s diagnosis. */
export interface CauseView {
  id: string;
  confirmed: boolean;
  text: string;
}

/** The diagnosis of a delivery that did not verify (`pixhook verify`). */
export interface DiagnosisView {
  step?: 'secret' | 'header' | 'timestamp' | 'signature' | 'body';
  code?: string;
  message?: string;
  signatureMatches?: boolean;
  timestamp?: { t: number; ageSeconds: number; tolerance: number | false };
  causes: CauseView[];
}

/** A request the inspector (the dashboard acting as the receiver) received. */
export interface InspectedDelivery {
  id: string;
  time: string;
  method: string;
  /** The path and query as requested. */
  path: string;
  headers: Record<string, string>;
  /** The body as UTF-8 text (bytes that are not UTF-8 show as U+FFFD). */
  body: string;
  bodyBytes: number;
  /** `verified` (handlers would run), `duplicate` (event seen before), `rejected` (any error answer). */
  verdict: 'verified' | 'duplicate' | 'rejected';
  /** What the inspector answered. */
  answer: ReceivedAnswer;
  code?: string;
  message?: string;
  event?: { id: string; type: string };
  /** For a request that failed verification: which step, and the likely causes. */
  diagnosis?: DiagnosisView;
}

/** Defaults the page shows in its forms. */
export interface DashboardDefaults {
  staleAgeSeconds: number;
  timeScale: number;
  maxAttempts: number;
  deadlineSeconds: number;
  /** The spec's retry delays, in seconds. */
  retryDelaysSeconds: number[];
  /** The tolerance a pixhook receiver applies by default, in seconds. */
  toleranceSeconds: number;
}

/** Everything the page shows: `GET /api/state`, and the first Server-Sent Event. */
export interface Snapshot {
  endpoint: EndpointView;
  /** The spec's event types, in its order. */
  eventTypes: string[];
  /** A realistic sample `data.object` per event type. */
  samples: Record<string, Record<string, unknown>>;
  /** Newest last. */
  attempts: AttemptEntry[];
  /** Newest last. */
  runs: ScheduleRun[];
  /** Newest last. */
  inspected: InspectedDelivery[];
  /** Where to send deliveries for the inspector, e.g. `http://127.0.0.1:4343/inspect`. */
  inspectorUrl: string;
  defaults: DashboardDefaults;
}

/** One Server-Sent Event's data (`GET /api/events`): a whole snapshot first, then changes. */
export type ServerEvent =
  | { kind: 'snapshot'; snapshot: Snapshot }
  | { kind: 'endpoint'; endpoint: EndpointView }
  /** A new attempt. */
  | { kind: 'attempt'; attempt: AttemptEntry }
  /** A new or changed schedule run. */
  | { kind: 'run'; run: ScheduleRun }
  | { kind: 'inspected'; delivery: InspectedDelivery };

/** `POST /api/endpoint`: set the URL and, when given, the secret. */
export interface EndpointRequest {
  url: string;
  /** Omitted or empty: keep the secret set before. */
  secret?: string;
}

/** `POST /api/send`: a test event, signed with all four headers. */
export interface SendRequest {
  type: string;
  /** The event's `data.object`. */
  object: Record<string, unknown>;
  /** `once`: one delivery; `twice`: the same delivery twice at once; `stale`: signed `ageSeconds` ago. */
  mode: 'once' | 'twice' | 'stale';
  /** For `stale`; @default 600 */
  ageSeconds?: number;
}

/** `POST /api/replay`: re-send a logged attempt. */
export interface ReplayRequest {
  attemptId: string;
  /** `as-is`: the same bytes and headers; `re-signed`: a fresh timestamp; `edited`: `body` re-signed. */
  mode: 'as-is' | 're-signed' | 'edited';
  /** For `edited`: the new body, a JSON object. */
  body?: string;
}

/** `POST /api/schedule`: play the retry schedule with a new event. */
export interface ScheduleRequest {
  type: string;
  object?: Record<string, unknown>;
  timeScale: number;
  maxAttempts: number;
  deadlineSeconds: number;
}

/** Every `POST /api/…` answers this on success (`attempts` for sends, `run` for a schedule). */
export interface ActionResult {
  endpoint?: EndpointView;
  attempts?: AttemptEntry[];
  run?: ScheduleRun;
}

/** Every refused API request answers this, with a 4xx status. */
export interface ApiError {
  error: { code: string; message: string };
}

// The production views (`/api/production…`): the inbox and the dead letters of queued processing.
// Every string in them was read from a database and came from a request: untrusted text.

/** `GET /api/production`: which views the dashboard has, and whether it may change anything. */
export interface ProductionInfo {
  /** Started with `readOnly`: every change is refused (403) and the page shows no button for one. */
  readOnly: boolean;
  /** Whether an inbox (an archive) is configured. */
  inbox: boolean;
  /** The dead-letter queues, each named by `id` in the API's paths. */
  deadLetters: { id: string; engine: string; queueName: string }[];
}

/** `GET /api/production/inbox/events/<id>`: one event, its body as base64 (and as text when UTF-8). */
export interface InboxEventView extends Omit<InboxEvent, 'body'> {
  /** The exact bytes received, base64. */
  body: string;
  /** The same bytes as text, when they are valid UTF-8. */
  text?: string;
}

/** `GET /api/production/dead-letters/<queue>?offset=&limit=`: a page of dead letters, newest first. */
export interface DeadLetterPage {
  /** How many dead letters the queue holds. */
  total: number;
  offset: number;
  limit: number;
  items: DeadLetter[];
}

/** `POST /api/production/inbox/replay` and `…/replay-matching`: how many replays were requested. */
export interface ReplayAnswer {
  requested: number;
}

/** `POST /api/production/dead-letters/<queue>/retry|discard|retry-all|discard-all`: how many. */
export interface SetActionAnswer {
  count: number;
}

/** A refused set action (`confirm` missing or not the count): a 409 with the count the server found. */
export interface ConfirmRefusal extends ApiError {
  count: number;
}
