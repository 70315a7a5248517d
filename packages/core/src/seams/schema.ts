// Events checked against the app's schema: `on(type, { schema }, handler)` with any Standard Schema
// v1 validator (zod, valibot, arktype). The handler runs on the validated `data.object`; a signed
// event that fails the schema is acknowledged, its handler skipped and the failure reported
// (`SCHEMA_MISMATCH`): answering 4xx would make the service retry it for 32 hours, then disable the
// endpoint, for an event that is the service's own and that our schema refuses.
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isWebhookVerificationError, WebhookVerificationError } from '../protocol/errors.js';
import type { AnyEvent } from '../protocol/events.js';
import { isThenable } from '../util/maybe.js';
import type { AnyHandler, HandlerContext } from './context.js';

export type { StandardSchemaV1 };

/** The `cause` of a `SCHEMA_MISMATCH` error: the validator's own issues. Untrusted text: they may quote the event. */
export class SchemaMismatchError extends Error {
  override readonly name = 'SchemaMismatchError';
  /** The issues, as the validator reported them (`message`, and `path` into `data.object`). */
  readonly issues: readonly StandardSchemaV1.Issue[];

  constructor(issues: readonly StandardSchemaV1.Issue[]) {
    super(`data.object failed the schema: ${describeIssues(issues)}`);
    this.issues = issues;
  }
}

/** Most issues described in a message, and the longest text of one. */
const DESCRIBED_ISSUES = 5;
const ISSUE_CHARACTERS = 200;

/** One path segment as text. */
function segment(part: PropertyKey | StandardSchemaV1.PathSegment): string {
  const key = typeof part === 'object' && part !== null ? part.key : part;
  return typeof key === 'symbol' ? key.toString() : String(key);
}

// JSON.stringify escapes U+0000–U+001F but leaves DEL, the C1 controls and the bidi and line
// separators as themselves: these are escaped too, so no terminal or bidi control reaches a log.
const UNESCAPED_BY_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` as a JSON string with every control and bidi character escaped (`"a\u202eb"`). */
function quote(text: string): string {
  return JSON.stringify(text).replace(UNESCAPED_BY_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `data.object.size: Expected number…` for the first issues, each quoted and escaped (the text is untrusted). */
function describeIssues(issues: readonly StandardSchemaV1.Issue[]): string {
  const shown = issues.slice(0, DESCRIBED_ISSUES).map((issue) => {
    const path = ['data.object', ...(issue.path ?? []).map(segment)].join('.');
    const message = String(issue.message ?? '');
    return `${quote(path.slice(0, ISSUE_CHARACTERS))}: ${quote(message.slice(0, ISSUE_CHARACTERS))}`;
  });
  const more = issues.length > DESCRIBED_ISSUES ? ` (and ${issues.length - DESCRIBED_ISSUES} more)` : '';
  return `${shown.join('; ')}${more}`;
}

/** Errors made here: a schema failure is recognised by identity, never by a code a handler could throw. */
const MISMATCHES = new WeakSet<object>();

/** True for the `SCHEMA_MISMATCH` of a handler skipped by its schema: the run goes on without it. */
export function isSchemaMismatch(error: unknown): error is WebhookVerificationError {
  return typeof error === 'object' && error !== null && MISMATCHES.has(error);
}

function mismatch(event: AnyEvent, name: string, issues: readonly StandardSchemaV1.Issue[]): WebhookVerificationError {
  const cause = new SchemaMismatchError(issues);
  const error = new WebhookVerificationError(
    'SCHEMA_MISMATCH',
    `The data.object of ${event.type} event ${event.id} does not match the schema of handler ${name}, which was skipped: ${describeIssues(issues)}. The event is the service's own (it was signed), so it was acknowledged (in a queue worker: kept as a dead letter): fix the schema, then replay it (or retry the dead letter).`,
    { cause },
  );
  MISMATCHES.add(error);
  return error;
}

/**
 * True for a failure of `webhooks.process()` that no further attempt can mend (a `SCHEMA_MISMATCH`):
 * queue engines end the job at once as a dead letter instead of retrying it (BullMQ's
 * `UnrecoverableError`). Recognised by its code, so two copies of core agree.
 */
export function isFinalFailure(error: unknown): boolean {
  return isWebhookVerificationError(error) && error.code === 'SCHEMA_MISMATCH';
}

/** True when `value` is a Standard Schema v1 validator (`~standard` with `version: 1` and `validate`). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const standard = (value as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return (
    typeof standard === 'object' &&
    standard !== null &&
    standard.version === 1 &&
    typeof standard.validate === 'function'
  );
}

/**
 * `handler`, run only on an event whose `data.object` passes `schema`, with the validated value as
 * `data.object`. A failure throws the `SCHEMA_MISMATCH` that `isSchemaMismatch` recognises (the
 * modes report it and run the other handlers). Synchronous when the validator is.
 */
export function validating(schema: StandardSchemaV1, handler: AnyHandler): AnyHandler {
  const standard = schema['~standard'];
  const name = handler.name === '' ? 'without a name' : JSON.stringify(handler.name.slice(0, 64));
  const after = (result: StandardSchemaV1.Result<unknown>, event: AnyEvent, context: HandlerContext): unknown => {
    if (result.issues !== undefined) throw mismatch(event, name, result.issues);
    const object = result.value;
    const checked = object === event.data.object ? event : ({ ...event, data: { ...event.data, object } } as AnyEvent);
    return handler(checked, context);
  };
  const run = (event: AnyEvent, context: HandlerContext): unknown => {
    const result = standard.validate(event.data.object);
    return isThenable(result)
      ? Promise.resolve(result).then((settled) => after(settled, event, context))
      : after(result, event, context);
  };
  // The archive's runs and the traces name handlers by their function's name.
  Object.defineProperty(run, 'name', { value: handler.name });
  return run;
}
