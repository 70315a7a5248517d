// The production views' API, under /api/production: the inbox (an InboxReader: PostgresArchive or
// RedisArchive) and the dead letters of queued processing (BullMQQueue, PgBossQueue). The page
// reads it with GET and changes things with POST; with `readOnly` every POST is refused (403).
import {
  DEAD_LETTER_METHODS,
  type DeadLetterSource,
  INBOX_OUTCOMES,
  type InboxOutcome,
  type InboxQuery,
  type InboxReader,
} from '@pixhook/core';

export type { DeadLetterSource };

import { ActionError } from './actions.js';
import type { DeadLetterPage, InboxEventView, ProductionInfo, ReplayAnswer, SetActionAnswer } from './protocol.js';

/** What the production views read and change. */
export interface Production {
  inbox: InboxReader | undefined;
  deadLetters: readonly DeadLetterSource[];
  readOnly: boolean;
}

/** The most events a filtered replay may request at once: a larger set is refused, narrow the filter. */
export const MAX_REPLAY_SET = 10_000;

/** The most dead letters one page lists. */
export const MAX_DEAD_LETTER_PAGE = 500;

export const READ_ONLY_MESSAGE =
  'The dashboard is read-only (--read-only): it shows production data and changes nothing.';

function invalid(message: string): ActionError {
  return new ActionError(400, 'INVALID_REQUEST', message);
}

/** A 409 that says how many the server counted, so the page can ask again with `confirm` set to it. */
export class ConfirmError extends ActionError {
  constructor(
    readonly count: number,
    message: string,
  ) {
    super(409, 'CONFIRM_COUNT', message);
  }
}

/** Whether `path` is one of the production views' API. */
export function isProductionPath(path: string): boolean {
  return path === '/api/production' || path.startsWith('/api/production/');
}

/** `GET /api/production…`: what the page shows. */
export async function productionGet(production: Production, path: string, params: URLSearchParams): Promise<unknown> {
  if (path === '/api/production') return info(production);
  const parts = segments(path);
  if (parts[0] === 'inbox') {
    const inbox = inboxOf(production);
    if (parts.length === 1) return read('The inbox', () => inbox.list(inboxQuery(params)));
    if (parts.length === 3 && parts[1] === 'events') return eventView(inbox, parts[2] as string);
  }
  if (parts[0] === 'dead-letters' && parts.length >= 2) {
    const source = sourceOf(production, parts[1] as string);
    if (parts.length === 2) return deadLetterPage(source, params);
    if (parts.length === 3) {
      const id = parts[2] as string;
      const letter = await read('The dead letters', () => source.getDeadLetter(id));
      if (!letter) throw new ActionError(404, 'NO_SUCH_DEAD_LETTER', 'There is no such dead letter (any more).');
      return letter;
    }
  }
  throw new ActionError(404, 'NOT_FOUND', `Nothing at ${path}.`);
}

/** `POST /api/production/…`: replay, retry, discard; every one refused when read-only. */
export async function productionPost(production: Production, path: string, body: unknown): Promise<unknown> {
  if (production.readOnly) throw new ActionError(403, 'READ_ONLY', READ_ONLY_MESSAGE);
  const parts = segments(path);
  const request = object(body);
  if (parts[0] === 'inbox' && parts.length === 2) {
    const inbox = inboxOf(production);
    if (parts[1] === 'replay') return replayEvents(inbox, request);
    if (parts[1] === 'replay-matching') return replayMatching(inbox, request);
  }
  if (parts[0] === 'dead-letters' && parts.length === 3) {
    const source = sourceOf(production, parts[1] as string);
    switch (parts[2]) {
      case 'retry':
        return oneDeadLetter(source, request, 'retry');
      case 'discard':
        return oneDeadLetter(source, request, 'discard');
      case 'retry-all':
        return allDeadLetters(source, request, 'retry');
      case 'discard-all':
        return allDeadLetters(source, request, 'discard');
    }
  }
  throw new ActionError(404, 'NOT_FOUND', `There is no action at ${path}.`);
}

function info(production: Production): ProductionInfo {
  return {
    readOnly: production.readOnly,
    inbox: production.inbox !== undefined,
    deadLetters: production.deadLetters.map((source, index) => ({
      id: String(index),
      engine: String(source.engine),
      queueName: String(source.queueName),
    })),
  };
}

/** The path after /api/production/, split and decoded (an id may hold any character). */
function segments(path: string): string[] {
  return path
    .slice('/api/production/'.length)
    .split('/')
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        throw invalid('The path is not valid percent-encoding.');
      }
    });
}

function object(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('Send a JSON object.');
  return value as Record<string, unknown>;
}

function inboxOf(production: Production): InboxReader {
  if (!production.inbox) {
    throw new ActionError(
      404,
      'NO_INBOX',
      'No inbox is configured: start the dashboard with --postgres or --redis (or the inbox option).',
    );
  }
  return production.inbox;
}

function sourceOf(production: Production, id: string): DeadLetterSource {
  const source = /^\d{1,3}$/.test(id) ? production.deadLetters[Number(id)] : undefined;
  if (!source) throw new ActionError(404, 'NO_SUCH_QUEUE', 'There is no such dead-letter queue in this dashboard.');
  return source;
}

/**
 * A call to the archive or a queue: its `pixhook: ` TypeError (bad input, a malformed cursor) is a
 * 400; any other failure (the database down) a 503 saying what could not be read.
 */
async function read<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (caught) {
    if (caught instanceof ActionError) throw caught;
    const message = caught instanceof Error ? caught.message : String(caught);
    if (caught instanceof TypeError && message.startsWith('pixhook: ')) throw invalid(message);
    throw new ActionError(503, 'UNAVAILABLE', `${what} could not be reached: ${message}`);
  }
}

/** The query string as an `InboxQuery`: since/until as ms since the epoch or an ISO 8601 date. */
export function inboxQuery(params: URLSearchParams, paging = true): InboxQuery {
  const query: InboxQuery = {};
  const text = (name: string) => {
    const value = params.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const type = text('type');
  if (type !== undefined) query.type = type;
  const outcome = text('outcome');
  if (outcome !== undefined) {
    if (!INBOX_OUTCOMES.includes(outcome as InboxOutcome)) {
      throw invalid(`outcome must be one of ${INBOX_OUTCOMES.join(', ')}.`);
    }
    query.outcome = outcome as InboxOutcome;
  }
  for (const name of ['since', 'until'] as const) {
    const value = text(name);
    if (value === undefined) continue;
    const time = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    if (!Number.isSafeInteger(time)) throw invalid(`${name} must be a time: ms since the epoch or an ISO 8601 date.`);
    query[name] = time;
  }
  const eventId = text('eventId');
  if (eventId !== undefined) query.eventId = eventId;
  const deliveryId = text('deliveryId');
  if (deliveryId !== undefined) query.deliveryId = deliveryId;
  if (paging) {
    const limit = text('limit');
    if (limit !== undefined) {
      if (!/^\d+$/.test(limit)) throw invalid('limit must be a whole number from 1 to 500.');
      query.limit = Number(limit);
    }
    const cursor = text('cursor');
    if (cursor !== undefined) query.cursor = cursor;
  }
  return query;
}

/** The query of a JSON request (`replay-matching`): the same fields as the list's query string. */
function queryOf(value: unknown): InboxQuery {
  const fields = value === undefined ? {} : object(value);
  const params = new URLSearchParams();
  for (const [name, field] of Object.entries(fields)) {
    if (!['type', 'outcome', 'since', 'until', 'eventId', 'deliveryId'].includes(name)) {
      throw invalid(`query.${name} is not a filter: type, outcome, since, until, eventId or deliveryId.`);
    }
    if (field === undefined || field === null) continue;
    if (typeof field !== 'string' && typeof field !== 'number') throw invalid(`query.${name} must be a string.`);
    params.set(name, String(field));
  }
  return inboxQuery(params, false);
}

async function eventView(inbox: InboxReader, eventId: string): Promise<InboxEventView> {
  const event = await read('The inbox', () => inbox.get(eventId));
  if (!event) throw new ActionError(404, 'NO_SUCH_EVENT', 'There is no such event in the inbox (any more).');
  const { body, ...rest } = event;
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let text: string | undefined;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    text = undefined;
  }
  return { ...rest, body: bytes.toString('base64'), ...(text === undefined ? {} : { text }) };
}

async function replayEvents(inbox: InboxReader, request: Record<string, unknown>): Promise<ReplayAnswer> {
  const ids = request.eventIds;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > 100 ||
    !ids.every((id) => typeof id === 'string' && id !== '' && id.length <= 1_024)
  ) {
    throw invalid('eventIds must be 1 to 100 event ids (non-empty strings); replay a larger set with a filter.');
  }
  return { requested: await read('The inbox', () => inbox.requestReplay(ids as string[])) };
}

/**
 * A filtered set: the server lists every match (at most MAX_REPLAY_SET) and requests their replay
 * only when `confirm` is the count it finds now; else a 409 with that count.
 */
async function replayMatching(inbox: InboxReader, request: Record<string, unknown>): Promise<ReplayAnswer> {
  const query = queryOf(request.query);
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await read('The inbox', () =>
      inbox.list({ ...query, limit: 500, ...(cursor === undefined ? {} : { cursor }) }),
    );
    for (const item of page.items) ids.push(item.eventId);
    if (ids.length > MAX_REPLAY_SET) {
      throw new ActionError(
        413,
        'TOO_MANY',
        `More than ${MAX_REPLAY_SET.toLocaleString('en-US')} events match: narrow the filter (a type, an outcome, a time range).`,
      );
    }
    cursor = page.next;
  } while (cursor !== undefined);
  const unique = [...new Set(ids)];
  if (request.confirm !== unique.length) {
    throw new ConfirmError(unique.length, `${unique.length} events match: confirm with that count to replay them.`);
  }
  let requested = 0;
  for (let start = 0; start < unique.length; start += 500) {
    const chunk = unique.slice(start, start + 500);
    requested += await read('The inbox', () => inbox.requestReplay(chunk));
  }
  return { requested };
}

async function deadLetterPage(source: DeadLetterSource, params: URLSearchParams): Promise<DeadLetterPage> {
  const number = (name: string, fallback: number, min: number, max: number) => {
    const value = params.get(name);
    if (value === null || value === '') return fallback;
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw invalid(`${name} must be a whole number from ${min} to ${max}.`);
    return n;
  };
  const offset = number('offset', 0, 0, Number.MAX_SAFE_INTEGER);
  const limit = number('limit', 50, 1, MAX_DEAD_LETTER_PAGE);
  const [total, items] = await read('The dead letters', () =>
    Promise.all([source.countDeadLetters(), source.listDeadLetters({ offset, limit })]),
  );
  return { total, offset, limit, items };
}

function idOf(request: Record<string, unknown>): string {
  const { id } = request;
  if (typeof id !== 'string' || id === '' || id.length > 1_024) {
    throw invalid("id must be the dead letter's job id or event id, a non-empty string.");
  }
  return id;
}

async function oneDeadLetter(
  source: DeadLetterSource,
  request: Record<string, unknown>,
  verb: 'retry' | 'discard',
): Promise<SetActionAnswer> {
  const id = idOf(request);
  const done = await read('The dead letters', () =>
    verb === 'retry' ? source.retryDeadLetter(id) : source.discardDeadLetter(id),
  );
  if (!done) throw new ActionError(404, 'NO_SUCH_DEAD_LETTER', 'There is no such dead letter (any more).');
  return { count: 1 };
}

/** Every dead letter of a queue: only when `confirm` is the count there is now; else a 409 with it. */
async function allDeadLetters(
  source: DeadLetterSource,
  request: Record<string, unknown>,
  verb: 'retry' | 'discard',
): Promise<SetActionAnswer> {
  const count = await read('The dead letters', () => source.countDeadLetters());
  if (request.confirm !== count) {
    throw new ConfirmError(count, `There are ${count} dead letters: confirm with that count to ${verb} them all.`);
  }
  const done = await read('The dead letters', () =>
    verb === 'retry' ? source.retryAllDeadLetters() : source.discardAllDeadLetters(),
  );
  return { count: done };
}

/** The sources given to `startDashboard`, checked: each must have the dead-letter methods. */
export function checkSources(value: unknown): DeadLetterSource[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw new TypeError('pixhook: deadLetters must be an array of queues (BullMQQueue, PgBossQueue).');
  return value.map((source, index) => {
    const missing = DEAD_LETTER_METHODS.filter(
      (name) => typeof (source as Record<string, unknown>)?.[name] !== 'function',
    );
    if (missing.length > 0) {
      throw new TypeError(
        `pixhook: deadLetters[${index}] is not a dead-letter source (a BullMQQueue or PgBossQueue): it has no ${missing.join(', ')}.`,
      );
    }
    return source as DeadLetterSource;
  });
}

/** The inbox given to `startDashboard`, checked. */
export function checkInbox(value: unknown): InboxReader | undefined {
  if (value === undefined) return undefined;
  const methods = ['list', 'get', 'requestReplay'];
  const missing = methods.filter((name) => typeof (value as Record<string, unknown>)?.[name] !== 'function');
  if (missing.length > 0) {
    throw new TypeError(
      `pixhook: inbox is not an InboxReader (a PostgresArchive or RedisArchive): it has no ${missing.join(', ')}.`,
    );
  }
  return value as InboxReader;
}
