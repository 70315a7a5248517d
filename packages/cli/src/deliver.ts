import { DEFAULT_DEADLINE_SECONDS } from './schedule.js';

/** What one delivery attempt sends. */
export interface DeliveryRequest {
  /** The receiver's URL. */
  url: string;
  /** The exact body that was signed. */
  body: string;
  /** The four delivery headers (lower-case names), as `createSignedRequest` builds them. */
  headers: Record<string, string>;
  /** Seconds the receiver has to answer; @default DEFAULT_DEADLINE_SECONDS (10) */
  deadlineSeconds?: number;
}

/** How one attempt ended. `ok` is the spec's success: a 2xx within the deadline. */
export interface AttemptOutcome {
  ok: boolean;
  /** The HTTP status, when an answer came back in time. */
  status?: number;
  /** Milliseconds from sending to the end of the answer (or to the failure). */
  ms: number;
  /** The response body as text (when an answer came back in time). */
  body?: string;
  /** Why no answer counted: the deadline passed, or the connection failed. */
  failure?: 'timeout' | 'network';
  /** A short description of a network failure, e.g. `ECONNREFUSED`. */
  detail?: string;
}

/**
 * Makes one delivery attempt the way the service does: POST the signed body with its headers and
 * wait at most the deadline for the whole answer. Never rejects: every outcome is an
 * `AttemptOutcome`.
 *
 * @example
 * const outcome = await deliver({ url, ...createSignedRequest(createTestEvent('image.created'), { secret }) })
 * outcome.ok // true for a 2xx within 10 s
 */
export async function deliver(request: DeliveryRequest): Promise<AttemptOutcome> {
  const deadlineMs = (request.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS) * 1_000;
  const started = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deadlineMs);
  try {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: { 'user-agent': 'pixhook-cli', ...request.headers },
      body: request.body,
      signal: controller.signal,
      redirect: 'manual',
    });
    // The deadline covers the whole answer, body included: the service waits for all of it.
    const body = await response.text();
    const ms = performance.now() - started;
    return { ok: response.status >= 200 && response.status < 300, status: response.status, ms, body };
  } catch (error) {
    const ms = performance.now() - started;
    if (controller.signal.aborted) return { ok: false, ms, failure: 'timeout' };
    return { ok: false, ms, failure: 'network', detail: describeNetworkError(error) };
  } finally {
    clearTimeout(timer);
  }
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}
