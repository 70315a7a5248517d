import type {
  ActionResult,
  ApiError,
  EndpointRequest,
  ReplayRequest,
  ScheduleRequest,
  SendRequest,
} from '../protocol.js';

/** Each action the page can ask of the server, with its request body. */
export interface Routes {
  '/api/endpoint': EndpointRequest;
  '/api/endpoint/enable': Record<string, never>;
  '/api/send': SendRequest;
  '/api/replay': ReplayRequest;
  '/api/schedule': ScheduleRequest;
}

export type PostOutcome = { ok: true; result: ActionResult } | { ok: false; message: string };

/** POSTs JSON (the only content type the server takes) and never throws: a failure is a message. */
export async function post<P extends keyof Routes>(path: P, body: Routes[P]): Promise<PostOutcome> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `Could not reach the dashboard's server: ${reason}` };
  }
  const answer: unknown = await response.json().catch(() => undefined);
  if (response.ok) return { ok: true, result: (answer ?? {}) as ActionResult };
  const error = (answer as Partial<ApiError> | undefined)?.error;
  const message = typeof error?.message === 'string' ? error.message : undefined;
  return { ok: false, message: message ?? `The server answered ${response.status} ${response.statusText}`.trim() };
}

/** What a production call gives: the value, or why not (with the server's count for a 409 to confirm). */
export type Fetched<T> = { ok: true; value: T } | { ok: false; status: number; message: string; count?: number };

/**
 * A GET or a JSON POST of the production views (`/api/production…`); never throws: a failure is a
 * message (and, for a set action to confirm, the count the server found).
 */
export async function call<T>(path: string, body?: unknown): Promise<Fetched<T>> {
  let response: Response;
  try {
    response = await fetch(
      path,
      body === undefined
        ? { headers: { accept: 'application/json' } }
        : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
    );
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, status: 0, message: `Could not reach the dashboard's server: ${reason}` };
  }
  const answer: unknown = await response.json().catch(() => undefined);
  if (response.ok) return { ok: true, value: answer as T };
  const refusal = answer as (Partial<ApiError> & { count?: unknown }) | undefined;
  const message =
    typeof refusal?.error?.message === 'string'
      ? refusal.error.message
      : `The server answered ${response.status} ${response.statusText}`.trim();
  return {
    ok: false,
    status: response.status,
    message,
    ...(typeof refusal?.count === 'number' ? { count: refusal.count } : {}),
  };
}
