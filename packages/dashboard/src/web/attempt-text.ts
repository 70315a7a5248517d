import type { AttemptEntry, AttemptOrigin } from '../protocol.js';

const ORIGINS: Record<Exclude<AttemptOrigin, 'schedule'>, string> = {
  'test-event': 'test event',
  'send-twice': 'sent twice at once',
  'send-stale': 'stale',
  'replay-as-is': 'replay as is',
  'replay-re-signed': 're-signed',
  'replay-edited': 'edited and re-signed',
};

/** Why the attempt was made, as the log labels it. */
export function originLabel(attempt: AttemptEntry): string {
  if (attempt.origin === 'schedule') return `schedule attempt ${attempt.attemptNumber ?? '?'}`;
  return ORIGINS[attempt.origin];
}

/** The answer's status, or why there was none: `200`, `no answer: timeout`, `network error: ECONNREFUSED`. */
export function statusText(attempt: AttemptEntry): string {
  if (attempt.answer) return String(attempt.answer.status);
  if (attempt.failure === 'timeout') return 'no answer: timeout';
  return `network error: ${attempt.detail ?? 'no answer'}`;
}

/** The value of `data-status`: the status number, or `timeout` / `network`. */
export function statusAttribute(attempt: AttemptEntry): string {
  return attempt.answer ? String(attempt.answer.status) : (attempt.failure ?? 'network');
}

/** A short result for announcements: `200`, `400 SIGNATURE_MISMATCH`, `200 duplicate`. */
export function attemptResult(attempt: AttemptEntry): string {
  const parts = [statusText(attempt), attempt.code, attempt.duplicate ? 'duplicate' : undefined];
  return parts.filter(Boolean).join(' ');
}
