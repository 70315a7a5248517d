import { DEFAULT_DEADLINE_SECONDS, DEFAULT_MAX_ATTEMPTS, RETRY_DELAYS_SECONDS } from '@pixhook/cli';
import { EVENT_TYPES } from '@pixhook/core';
import { SAMPLE_OBJECTS } from '@pixhook/core/testing';
import {
  type AttemptEntry,
  type EndpointView,
  type InspectedDelivery,
  LOG_LIMIT,
  type ScheduleRun,
  type ServerEvent,
  type Snapshot,
  withinAnswerBudget,
} from './protocol.js';

/** A pixhook receiver's default tolerance, in seconds; "send stale" signs twice that long ago. */
const TOLERANCE_SECONDS = 300;

/**
 * The dashboard's memory: the endpoint (URL, secret, enabled or auto-disabled), the delivery
 * log, the schedule runs and the inspector's list. Every change is told to the subscribers (the
 * page's Server-Sent Event streams). The secret is kept here only: `snapshot()` says whether one
 * is set, never what it is.
 */
export class DashboardState {
  #secret: string | undefined;
  #url: string | undefined;
  #disabledAt: string | undefined;
  #attempts: AttemptEntry[] = [];
  readonly #runs: ScheduleRun[] = [];
  readonly #inspected: InspectedDelivery[] = [];
  readonly #subscribers = new Set<(event: ServerEvent) => void>();
  readonly #counters = { a: 0, r: 0, i: 0 };

  constructor(
    readonly inspectorUrl: string,
    initial: { secret?: string | undefined; url?: string | undefined } = {},
  ) {
    this.#secret = initial.secret;
    this.#url = initial.url;
  }

  /** The secret, for signing and verifying inside this process only. */
  get secret(): string | undefined {
    return this.#secret;
  }

  get url(): string | undefined {
    return this.#url;
  }

  get disabled(): boolean {
    return this.#disabledAt !== undefined;
  }

  /** A new id for an attempt (`a1`), a run (`r1`) or an inspected delivery (`i1`). */
  newId(prefix: 'a' | 'r' | 'i'): string {
    return `${prefix}${++this.#counters[prefix]}`;
  }

  endpoint(): EndpointView {
    return {
      ...(this.#url === undefined ? {} : { url: this.#url }),
      secretSet: this.#secret !== undefined,
      state: this.#disabledAt === undefined ? 'enabled' : 'auto-disabled',
      ...(this.#disabledAt === undefined ? {} : { disabledAt: this.#disabledAt }),
    };
  }

  setEndpoint(url: string, secret: string | undefined): EndpointView {
    this.#url = url;
    if (secret !== undefined) this.#secret = secret;
    return this.#endpointChanged();
  }

  /** The last retry of a delivery failed: the service disables the endpoint (spec part 3). */
  autoDisable(): EndpointView {
    this.#disabledAt = new Date().toISOString();
    return this.#endpointChanged();
  }

  enable(): EndpointView {
    this.#disabledAt = undefined;
    return this.#endpointChanged();
  }

  attempt(id: string): AttemptEntry | undefined {
    return this.#attempts.find((entry) => entry.id === id);
  }

  addAttempt(entry: AttemptEntry): void {
    keep(this.#attempts, entry);
    this.#attempts = withinAnswerBudget(this.#attempts);
    this.#tell({ kind: 'attempt', attempt: entry });
  }

  /** A new run, or a change to one: told again whole. */
  putRun(run: ScheduleRun): void {
    if (!this.#runs.includes(run)) keep(this.#runs, run);
    this.#tell({ kind: 'run', run });
  }

  get running(): boolean {
    return this.#runs.some((run) => run.state === 'running');
  }

  addInspected(delivery: InspectedDelivery): void {
    keep(this.#inspected, delivery);
    this.#tell({ kind: 'inspected', delivery });
  }

  snapshot(): Snapshot {
    return {
      endpoint: this.endpoint(),
      eventTypes: [...EVENT_TYPES],
      samples: { ...SAMPLE_OBJECTS },
      attempts: [...this.#attempts],
      runs: [...this.#runs],
      inspected: [...this.#inspected],
      inspectorUrl: this.inspectorUrl,
      defaults: {
        staleAgeSeconds: 2 * TOLERANCE_SECONDS,
        timeScale: 3_600,
        maxAttempts: DEFAULT_MAX_ATTEMPTS,
        deadlineSeconds: DEFAULT_DEADLINE_SECONDS,
        retryDelaysSeconds: [...RETRY_DELAYS_SECONDS],
        toleranceSeconds: TOLERANCE_SECONDS,
      },
    };
  }

  /** Calls `listener` with every change until the returned function is called. */
  subscribe(listener: (event: ServerEvent) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  #endpointChanged(): EndpointView {
    const endpoint = this.endpoint();
    this.#tell({ kind: 'endpoint', endpoint });
    return endpoint;
  }

  #tell(event: ServerEvent): void {
    for (const listener of this.#subscribers) listener(event);
  }
}

function keep<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > LOG_LIMIT) list.splice(0, list.length - LOG_LIMIT);
}
