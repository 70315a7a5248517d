import { useCallback, useEffect, useReducer } from 'preact/hooks';
import {
  type ActionResult,
  LOG_LIMIT,
  type ScheduleRun,
  type ServerEvent,
  type Snapshot,
  withinAnswerBudget,
} from '../protocol.js';
import { type PostOutcome, post, type Routes } from './api.js';

export type Connection = 'connecting' | 'live' | 'reconnecting';

interface State {
  snapshot?: Snapshot;
  connection: Connection;
  /** The last refused or failed action, shown in the alert region. */
  error?: string;
  /** The last thing to announce politely, e.g. "Sent image.created: 200". */
  announcement: string;
}

type Action =
  | { kind: 'event'; event: ServerEvent }
  | { kind: 'result'; result: ActionResult }
  | { kind: 'connection'; connection: Connection }
  | { kind: 'error'; error: string | undefined }
  | { kind: 'announce'; text: string };

/** Replaces the item with the same id (a run's progress), or appends it (one entry per id). */
function upsert<T extends { id: string }>(list: T[], item: T): T[] {
  const index = list.findIndex((other) => other.id === item.id);
  // The newest LOG_LIMIT, as the server keeps: a long session does not grow the page without end.
  return index === -1 ? [...list, item].slice(-LOG_LIMIT) : list.map((other, i) => (i === index ? item : other));
}

/**
 * Appends the items not listed yet. A POST's answer may come after the SSE events that followed it
 * (a schedule run that already finished), so for what the stream also sends, the stream wins.
 */
function addMissing<T extends { id: string }>(list: T[], items: T[]): T[] {
  const missing = items.filter((item) => !list.some((other) => other.id === item.id));
  return missing.length ? [...list, ...missing] : list;
}

function runOutcome(run: ScheduleRun): string {
  if (run.state === 'delivered') return `Retry schedule of ${run.eventType}: delivered`;
  if (run.state === 'auto-disabled') return `Retry schedule of ${run.eventType}: endpoint auto-disabled`;
  if (run.state === 'running') return `Retry schedule started for ${run.eventType}`;
  return `Retry schedule of ${run.eventType}: ${run.state}`;
}

function applyEvent(state: State, event: ServerEvent): State {
  if (event.kind === 'snapshot') return { ...state, snapshot: event.snapshot };
  const snapshot = state.snapshot;
  if (!snapshot) return state;
  switch (event.kind) {
    case 'endpoint':
      return { ...state, snapshot: { ...snapshot, endpoint: event.endpoint } };
    case 'attempt':
      return {
        ...state,
        snapshot: { ...snapshot, attempts: withinAnswerBudget(upsert(snapshot.attempts, event.attempt)) },
      };
    case 'inspected':
      return { ...state, snapshot: { ...snapshot, inspected: upsert(snapshot.inspected, event.delivery) } };
    case 'run': {
      const before = snapshot.runs.find((run) => run.id === event.run.id);
      const finished = before?.state === 'running' && event.run.state !== 'running';
      // Announced from the stream, in its order: the POST's answer may come after the run ended.
      const started = before === undefined && event.run.state === 'running';
      return {
        ...state,
        snapshot: { ...snapshot, runs: upsert(snapshot.runs, event.run) },
        announcement: finished || started ? runOutcome(event.run) : state.announcement,
      };
    }
  }
}

function reducer(state: State, action: Action): State {
  switch (action.kind) {
    case 'event':
      return applyEvent(state, action.event);
    case 'result': {
      const { snapshot } = state;
      if (!snapshot) return state;
      const { endpoint, attempts, run } = action.result;
      return {
        ...state,
        snapshot: {
          ...snapshot,
          endpoint: endpoint ?? snapshot.endpoint,
          attempts: addMissing(snapshot.attempts, attempts ?? []),
          runs: addMissing(snapshot.runs, run ? [run] : []),
        },
      };
    }
    case 'connection':
      return { ...state, connection: action.connection };
    case 'error':
      return { ...state, error: action.error };
    case 'announce':
      // A live region does not repeat an unchanged text: a trailing no-break space makes the same news new.
      return { ...state, announcement: action.text === state.announcement ? `${action.text}\u00a0` : action.text };
  }
}

export interface Dashboard extends State {
  /** Sends an action; a failure's message goes to the alert region. Never throws. */
  act<P extends keyof Routes>(path: P, body: Routes[P]): Promise<PostOutcome>;
  announce(text: string): void;
  dismissError(): void;
}

/** The server's state, kept live by its Server-Sent Events, and the actions on it. */
export function useDashboard(): Dashboard {
  const [state, dispatch] = useReducer(reducer, { connection: 'connecting', announcement: '' });

  useEffect(() => {
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const connect = () => {
      source = new EventSource('/api/events');
      source.onopen = () => dispatch({ kind: 'connection', connection: 'live' });
      source.onmessage = (message: MessageEvent<string>) => {
        try {
          dispatch({ kind: 'event', event: JSON.parse(message.data) as ServerEvent });
        } catch {
          // A message that is not JSON is not ours: ignore it.
        }
      };
      source.onerror = () => {
        dispatch({ kind: 'connection', connection: 'reconnecting' });
        // EventSource retries by itself, except after an answer it cannot use (it then closes).
        if (source?.readyState === EventSource.CLOSED) retry = setTimeout(connect, 2000);
      };
    };
    connect();
    return () => {
      clearTimeout(retry);
      source?.close();
    };
  }, []);

  const act = useCallback(async <P extends keyof Routes>(path: P, body: Routes[P]) => {
    dispatch({ kind: 'error', error: undefined });
    const outcome = await post(path, body);
    if (outcome.ok) dispatch({ kind: 'result', result: outcome.result });
    else dispatch({ kind: 'error', error: outcome.message });
    return outcome;
  }, []);
  const announce = useCallback((text: string) => dispatch({ kind: 'announce', text }), []);
  const dismissError = useCallback(() => dispatch({ kind: 'error', error: undefined }), []);

  return { ...state, act, announce, dismissError };
}
