import diagnostics_channel from 'node:diagnostics_channel';
import {
  type Attributes,
  type Context,
  type Counter,
  context,
  createNoopMeter,
  type Histogram,
  type Link,
  type ObservableCounter,
  type ObservableGauge,
  type ObservableResult,
  type ObservableUpDownCounter,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { InstrumentationBase, type InstrumentationConfig } from '@opentelemetry/instrumentation';
import {
  CHANNELS,
  type DeliveryMessage,
  type EnqueueMessage,
  type HandlerMessage,
  type JobMessage,
  type TransactionMessage,
} from '@pixhook/core';
import { ATTR, errorCode, errorType, number, text } from './attributes.js';

/** The instrumentation's name: its tracer's and its meter's. */
export const INSTRUMENTATION_NAME = '@pixhook/opentelemetry';
/** This package's version (package.json's; a test keeps them equal). */
export const INSTRUMENTATION_VERSION = '0.1.0';

/** How many jobs a queue holds in each state (`BullMQQueue.counts()`, `PgBossQueue.counts()`). */
export interface QueueCounts {
  /** Jobs waiting for a worker. */
  waiting: number;
  /** Jobs a worker is running now. */
  active: number;
  /** Jobs waiting for their time: a retry's backoff, or a delay. */
  delayed: number;
  /** Jobs that ran out of attempts and are kept as dead letters. */
  deadLetter: number;
}

/** A queue whose job counts the `pixhook.queue.jobs` gauge observes. */
export interface QueueWithCounts {
  /** Resolves with the queue's job counts; a rejection (or no answer in 5 s) skips the queue for that collection. */
  counts(): Promise<QueueCounts>;
  /** The engine's name, `messaging.system` (`bullmq`, `pg-boss`). @default 'unknown' */
  readonly engine?: string;
  /** The queue's name, `messaging.destination.name`. @default the engine's name */
  readonly queueName?: string;
}

/** The options of `new PixhookInstrumentation(config)`. */
export interface PixhookInstrumentationConfig extends InstrumentationConfig {
  /**
   * Queues whose job counts (waiting, active, delayed, dead letters) the `pixhook.queue.jobs` gauge
   * reports at each collection. More can be added later with `observeQueue(queue)`.
   * @default []
   */
  queues?: QueueWithCounts[];
}

/**
 * Bucket boundaries of the duration histograms, in seconds: from 0.1 ms (a signature check) to 60 s
 * (a long job), with 8 and 10 s for the answer's budget and the service's deadline. Given as the
 * instruments' advice, so no SDK view is needed (the SDK's default buckets, 0 to 10 000, are made
 * for milliseconds); a view of the app's still wins.
 */
export const DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 8, 10, 30, 60,
]);

/** The attributes of `pixhook.verify.duration`, made once. */
const VERIFIED: Attributes = Object.freeze({ [ATTR.verified]: true });
const NOT_VERIFIED: Attributes = Object.freeze({ [ATTR.verified]: false });

/** The class of the API's no-op meter: what `this.meter` is while no meter provider is registered. */
const NoopMeter = createNoopMeter().constructor;

/** The longest wait for a queue's `counts()` at a collection, in ms. */
const COUNTS_TIMEOUT_MS = 5_000;

const QUEUE_STATES = [
  ['waiting', 'waiting'],
  ['active', 'active'],
  ['delayed', 'delayed'],
  ['deadLetter', 'dead_letter'],
] as const;

/**
 * Counts kept here per attribute set and reported at each collection (observable instruments),
 * instead of one SDK call per delivery: the SDK hashes a call's attributes every time, which was a
 * fifth of the instrumentation's cost per delivery. Bounded: every attribute is signed or pixhook's own.
 */
class Tallies {
  readonly #counts = new Map<string, { attributes: Attributes; value: number }>();
  add(key: string, attributes: () => Attributes, by: number): void {
    const tally = this.#counts.get(key);
    if (tally) tally.value += by;
    else this.#counts.set(key, { attributes: attributes(), value: by });
  }
  report(result: ObservableResult): void {
    for (const { attributes, value } of this.#counts.values()) result.observe(value, attributes);
  }
}

interface Instruments {
  deliveries: ObservableCounter;
  verifyDuration: Histogram;
  handlerDuration: Histogram;
  handlerActive: ObservableUpDownCounter;
  handlerSkipped: Counter;
  secretMatches: ObservableCounter;
  endpointAtRisk: Counter;
  enqueueDuration: Histogram;
  jobDuration: Histogram;
  queueJobs: ObservableGauge;
  observe: (result: ObservableResult) => Promise<void>;
  reportDeliveries: (result: ObservableResult) => void;
  reportSecrets: (result: ObservableResult) => void;
  reportActive: (result: ObservableResult) => void;
}

/** What the instrumentation keeps of one message between its `start` and its `asyncEnd`. */
interface Step {
  span: Span;
  /** `performance.now()` at start. */
  startedAt: number;
  /** An `error` was published. */
  failed: boolean;
  /** The handler's event type, counted in `pixhook.handler.active` while it runs. */
  active?: string;
}

/** Why a handler was skipped: `stale` (the ordering guard), `schema` (its schema refused the event). */
type SkipReason = 'stale' | 'schema';

/**
 * Why the handler of `message` was skipped, or undefined when it ran: core sets `skipped: 'stale'`
 * on a handler the ordering guard skipped, and ends a handler its schema refused with a
 * `SCHEMA_MISMATCH` error (recognised by its code, as `isFinalFailure` does, so two copies of core agree).
 */
function skipReason(message: HandlerMessage): SkipReason | undefined {
  if (message.skipped === 'stale') return 'stale';
  if (message.error !== undefined && errorCode(message.error, '') === 'SCHEMA_MISMATCH') return 'schema';
  return undefined;
}

type Handlers = {
  start(message: unknown): void;
  end(message: unknown): void;
  asyncStart(message: unknown): void;
  asyncEnd(message: unknown): void;
  error(message: unknown): void;
};

const nothing = (): void => {};

function isQueueWithCounts(value: unknown): value is QueueWithCounts {
  return typeof value === 'object' && value !== null && typeof (value as QueueWithCounts).counts === 'function';
}

function checkQueues(queues: unknown): void {
  if (queues === undefined) return;
  if (!Array.isArray(queues)) {
    throw new TypeError('pixhook: PixhookInstrumentation: `queues` must be an array of queues with a counts() method.');
  }
  queues.forEach((queue, i) => {
    if (!isQueueWithCounts(queue)) {
      throw new TypeError(
        `pixhook: PixhookInstrumentation: queues[${i}] has no counts() method (BullMQQueue and PgBossQueue have one).`,
      );
    }
  });
}

/** A queue's engine and name for the gauge's attributes, read once per collection. */
function queueIdentity(queue: QueueWithCounts): { system: string; name: string } {
  let engine: string | undefined;
  let name: string | undefined;
  try {
    engine = text(queue.engine);
    name = text(queue.queueName);
  } catch {
    // A getter that throws: the defaults below.
  }
  const system = engine || 'unknown';
  return { system, name: name || system };
}

/** `counts()` within `ms`, or undefined: a queue that fails or hangs is skipped, never thrown. */
async function boundedCounts(queue: QueueWithCounts, ms: number): Promise<QueueCounts | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, ms, undefined);
      timer.unref?.();
    });
    const counted = Promise.resolve()
      .then(() => queue.counts())
      .catch(() => undefined);
    return await Promise.race([counted, timeout]);
  } catch {
    return undefined;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/**
 * OpenTelemetry instrumentation for pixhook: subscribes to the `diagnostics_channel` tracing
 * channels `@pixhook/core` publishes on (`CHANNELS`) and turns them into spans (`receive`,
 * `handler`, `send`, `process`, `transaction`) and metrics (`pixhook.deliveries`, durations,
 * matched secrets, skipped handlers, the last-chance alarm, queue job counts). It patches no module: load it before
 * or after pixhook, in any order. Never records a secret, a signature, a body or a handler's
 * error message.
 *
 * @example
 * import { registerInstrumentations } from '@opentelemetry/instrumentation';
 * import { PixhookInstrumentation } from '@pixhook/opentelemetry';
 * registerInstrumentations({ instrumentations: [new PixhookInstrumentation({ queues: [queue] })] });
 */
export class PixhookInstrumentation extends InstrumentationBase<PixhookInstrumentationConfig> {
  // Declared, not initialised: the base constructor calls enable() and _updateMetricInstruments()
  // before a subclass's field initialisers would run (and they would then reset what those set).
  declare private steps: WeakMap<object, Step> | undefined;
  declare private subscriptions: Array<[diagnostics_channel.TracingChannel<unknown, object>, Handlers]> | undefined;
  declare private instruments: Instruments | undefined;
  declare private observed: Set<QueueWithCounts> | undefined;
  /** No meter provider is registered: every instrument is a no-op. */
  declare private metricsOff: boolean | undefined;
  /** `pixhook.deliveries`, `pixhook.secret.matches` and `pixhook.handler.active`, counted here. */
  declare private tallies: { deliveries: Tallies; secrets: Tallies; active: Tallies } | undefined;

  constructor(config: PixhookInstrumentationConfig = {}) {
    super(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION, config);
  }

  override setConfig(config: PixhookInstrumentationConfig = {}): void {
    checkQueues(config.queues);
    super.setConfig({ ...config, queues: [...(config.queues ?? [])] });
  }

  /** No module is patched: pixhook publishes on `diagnostics_channel`, and `enable()` subscribes. */
  protected override init(): [] {
    return [];
  }

  /** Subscribes to pixhook's channels (the base class calls it unless `enabled: false`). */
  override enable(): void {
    if (this.subscriptions) return;
    this.steps ??= new WeakMap();
    const subscriptions: Array<[diagnostics_channel.TracingChannel<unknown, object>, Handlers]> = [
      [CHANNELS.delivery, this.deliveryHandlers()],
      [CHANNELS.handler, this.handlerHandlers()],
      [CHANNELS.enqueue, this.enqueueHandlers()],
      [CHANNELS.job, this.jobHandlers()],
      [CHANNELS.transaction, this.transactionHandlers()],
    ].map(([name, handlers]) => [diagnostics_channel.tracingChannel(name as string), handlers as Handlers]);
    for (const [channel, handlers] of subscriptions) channel.subscribe(handlers);
    this.subscriptions = subscriptions;
  }

  /** Unsubscribes: no span or metric is recorded until `enable()` again. */
  override disable(): void {
    const subscriptions = this.subscriptions;
    if (!subscriptions) return;
    this.subscriptions = undefined;
    for (const [channel, handlers] of subscriptions) channel.unsubscribe(handlers);
  }

  /**
   * Adds a queue whose job counts the `pixhook.queue.jobs` gauge reports (beside the `queues`
   * option's). Returns a function that stops observing it.
   */
  observeQueue(queue: QueueWithCounts): () => void {
    if (!isQueueWithCounts(queue)) {
      throw new TypeError(
        'pixhook: observeQueue(queue): the queue has no counts() method (BullMQQueue and PgBossQueue have one).',
      );
    }
    this.observed ??= new Set();
    this.observed.add(queue);
    return () => {
      this.observed?.delete(queue);
    };
  }

  /** (Re)creates the instruments on the current meter (the base class calls it when a meter provider is set). */
  protected override _updateMetricInstruments(): void {
    try {
      this.createInstruments();
    } catch (error) {
      // A meter that fails here must not fail the app's setup: no metrics, spans still.
      this.instruments = undefined;
      this._diag.error('pixhook: creating the metric instruments failed; no pixhook metrics', errorType(error));
    }
  }

  private createInstruments(): void {
    const previous = this.instruments;
    if (previous) {
      previous.queueJobs.removeCallback(previous.observe);
      previous.deliveries.removeCallback(previous.reportDeliveries);
      previous.secretMatches.removeCallback(previous.reportSecrets);
      previous.handlerActive.removeCallback(previous.reportActive);
    }
    this.tallies ??= { deliveries: new Tallies(), secrets: new Tallies(), active: new Tallies() };
    const tallies = this.tallies;
    const meter = this.meter;
    this.metricsOff = meter instanceof NoopMeter;
    const queueJobs = meter.createObservableGauge('pixhook.queue.jobs', {
      description: 'Jobs in each state of each observed queue: waiting, active, delayed, dead_letter.',
      unit: '{job}',
    });
    const observe = (result: ObservableResult) => this.observeQueues(result);
    queueJobs.addCallback(observe);
    const deliveries = meter.createObservableCounter('pixhook.deliveries', {
      description: 'Deliveries answered, by outcome, status and error code.',
      unit: '{delivery}',
    });
    const secretMatches = meter.createObservableCounter('pixhook.secret.matches', {
      description: 'Verified deliveries by the index of the secret that matched (0: the first).',
      unit: '{delivery}',
    });
    const handlerActive = meter.createObservableUpDownCounter('pixhook.handler.active', {
      description: 'Handler runs in progress.',
      unit: '{run}',
    });
    const reportDeliveries = (result: ObservableResult) => tallies.deliveries.report(result);
    const reportSecrets = (result: ObservableResult) => tallies.secrets.report(result);
    const reportActive = (result: ObservableResult) => tallies.active.report(result);
    deliveries.addCallback(reportDeliveries);
    secretMatches.addCallback(reportSecrets);
    handlerActive.addCallback(reportActive);
    /** A duration histogram in seconds, with pixhook's buckets. */
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, {
        description,
        unit: 's',
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
      });
    this.instruments = {
      deliveries,
      reportDeliveries,
      secretMatches,
      reportSecrets,
      handlerActive,
      reportActive,
      verifyDuration: seconds(
        'pixhook.verify.duration',
        'Time to check the size, the signature and parse the event of a delivery.',
      ),
      handlerDuration: seconds(
        'pixhook.handler.duration',
        'Duration of one handler run, in a request or in a queue worker.',
      ),
      handlerSkipped: meter.createCounter('pixhook.handler.skipped', {
        description:
          'Handlers skipped for an event, by reason: stale (the ordering guard had seen a newer event with the same key) or schema (its schema refused the event).',
        unit: '{run}',
      }),
      endpointAtRisk: meter.createCounter('pixhook.endpoint.at_risk', {
        description:
          'Deliveries answered with a failure on what was probably one of the last attempts before the service disables the endpoint (ENDPOINT_AT_RISK).',
        unit: '{delivery}',
      }),
      enqueueDuration: seconds('pixhook.enqueue.duration', 'Time to write a verified delivery to the queue.'),
      jobDuration: seconds('pixhook.job.duration', "Duration of one queued job's run by a worker."),
      queueJobs,
      observe,
    };
  }

  private async observeQueues(result: ObservableResult): Promise<void> {
    try {
      if (!this.subscriptions) return;
      const queues = new Set<QueueWithCounts>([...(this._config.queues ?? []), ...(this.observed ?? [])]);
      await Promise.all(
        [...queues].map(async (queue) => {
          const { system, name } = queueIdentity(queue);
          const counts = await boundedCounts(queue, COUNTS_TIMEOUT_MS);
          if (typeof counts !== 'object' || counts === null) return;
          for (const [field, state] of QUEUE_STATES) {
            const value = number((counts as unknown as Record<string, unknown>)[field]);
            if (value === undefined || value < 0) continue;
            result.observe(value, {
              [ATTR.messagingSystem]: system,
              [ATTR.messagingDestination]: name,
              [ATTR.queueState]: state,
            });
          }
        }),
      );
    } catch (error) {
      this._diag.debug('pixhook: observing the queues failed', errorType(error));
    }
  }

  /** Runs `handler` for a message, never throwing: Node rethrows a subscriber's exception as uncaught. */
  private safely<M>(where: string, handler: (message: M) => void): (message: unknown) => void {
    return (message) => {
      try {
        if (typeof message === 'object' && message !== null) handler(message as M);
      } catch (error) {
        this._diag.debug(`pixhook: ${where} failed`, errorType(error));
      }
    };
  }

  /**
   * True when recording `span` would do nothing: no SDK records it (not recording, no valid context
   * to hand on) and no meter provider is registered. Then a message is left alone, so the
   * instrumentation loaded without an SDK costs little more than the channels' own publishing.
   */
  private inert(span: Span): boolean {
    return this.metricsOff === true && !span.isRecording() && !trace.isSpanContextValid(span.spanContext());
  }

  private begin(message: object, span: Span): Step {
    const step: Step = { span, startedAt: performance.now(), failed: false };
    this.steps?.set(message, step);
    return step;
  }

  /** The step of `message`, removed: asyncEnd is the last event of a message. */
  private finish(message: object): Step | undefined {
    const step = this.steps?.get(message);
    if (step) this.steps?.delete(message);
    return step;
  }

  /**
   * Keeps `span` as the step of `message`, unless recording it would do nothing; with `parent`,
   * pixhook then runs the step in the span's context.
   */
  private track(message: object, span: Span, parent?: Context): Step | undefined {
    if (this.inert(span)) return undefined;
    const step = this.begin(message, span);
    // Only the delivery, handler and job messages are given a parent: they take `runInContext`.
    if (parent) this.runIn(message as { runInContext?: <T>(fn: () => T) => T }, parent, span);
    return step;
  }

  /**
   * Ends the span of `message`: `attributes` set, and status ERROR with `error.type` when an
   * `error` was published. Returns its step and how long it took, in seconds.
   */
  private close(
    message: object,
    errorTypeOf: () => string,
    attributes?: Attributes,
  ): { step: Step; seconds: number } | undefined {
    const step = this.finish(message);
    if (!step) return undefined;
    const seconds = (performance.now() - step.startedAt) / 1000;
    const { span } = step;
    if (attributes) span.setAttributes(attributes);
    if (step.failed) {
      span.setAttribute(ATTR.errorType, errorTypeOf());
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    return { step, seconds };
  }

  private failed(message: object): void {
    const step = this.steps?.get(message);
    if (step) step.failed = true;
  }

  /** The context in which the span of a message started, for a child. */
  private parentContext(parent: object | undefined): Context {
    const step = parent ? this.steps?.get(parent) : undefined;
    return step ? trace.setSpan(context.active(), step.span) : context.active();
  }

  /** Makes pixhook run the step in `span`'s context, after whatever another subscriber set. */
  private runIn(message: { runInContext?: <T>(fn: () => T) => T }, parent: Context, span: Span): void {
    const active = trace.setSpan(parent, span);
    const previous = message.runInContext;
    message.runInContext = previous
      ? <T>(fn: () => T): T => context.with(active, () => previous(fn))
      : <T>(fn: () => T): T => context.with(active, fn);
  }

  private deliveryHandlers(): Handlers {
    return {
      start: this.safely<DeliveryMessage>('receive start', (message) => {
        const parent = context.active();
        const span = this.tracer.startSpan(
          'receive webhook',
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              [ATTR.messagingSystem]: 'pixhook',
              [ATTR.messagingOperation]: 'receive',
              [ATTR.mode]: text(message.mode) ?? 'inline',
            },
          },
          parent,
        );
        this.track(message, span, parent);
      }),
      end: nothing,
      asyncStart: nothing,
      error: this.safely<DeliveryMessage>('receive error', (message) => this.failed(message)),
      asyncEnd: this.safely<DeliveryMessage>('receive end', (message) => this.endDelivery(message)),
    };
  }

  private endDelivery(message: DeliveryMessage): void {
    const step = this.finish(message);
    if (!step && this.metricsOff === true) return;
    const status = number(message.status);
    const code = text(message.code, 64);
    const eventType = text(message.eventType, 256);
    const eventId = text(message.eventId, 256);
    const outcome = text(message.outcome, 32) ?? 'rejected';
    const mode = text(message.mode, 32) ?? 'inline';
    const secretIndex = number(message.secretIndex);
    const attempt = number(message.attempt);
    const verifyMs = number(message.verifyMs);
    const failure = status === undefined || status < 200 || status >= 300;
    const errorTypeValue = failure ? (code ?? 'INTERNAL_ERROR') : undefined;

    if (step) {
      const { span } = step;
      if (eventType !== undefined) span.updateName(`receive ${eventType}`);
      const attributes: Attributes = {
        [ATTR.outcome]: outcome,
        [ATTR.mode]: mode,
        [ATTR.eventType]: eventType,
        [ATTR.eventId]: eventId,
        [ATTR.messageId]: eventId,
        [ATTR.deliveryId]: text(message.deliveryId),
        [ATTR.statusCode]: status,
        [ATTR.errorType]: errorTypeValue,
        [ATTR.secretIndex]: secretIndex,
        [ATTR.attempt]: attempt,
        [ATTR.verifyDuration]: verifyMs === undefined ? undefined : verifyMs / 1000,
        [ATTR.lastChance]: message.lastChance === true ? true : undefined,
      };
      span.setAttributes(attributes);
      if (status === undefined || status >= 500 || status === 409 || message.lastChance === true || step.failed) {
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    }

    const instruments = this.instruments;
    const tallies = this.tallies;
    if (!instruments || !tallies || this.metricsOff === true) return;
    tallies.deliveries.add(
      `${outcome}\n${mode}\n${status}\n${errorTypeValue}\n${eventType}`,
      () => {
        const delivery: Attributes = { [ATTR.outcome]: outcome, [ATTR.mode]: mode };
        if (status !== undefined) delivery[ATTR.statusCode] = status;
        if (errorTypeValue !== undefined) delivery[ATTR.errorType] = errorTypeValue;
        if (eventType !== undefined) delivery[ATTR.eventType] = eventType;
        return delivery;
      },
      1,
    );
    if (verifyMs !== undefined) {
      instruments.verifyDuration.record(verifyMs / 1000, secretIndex !== undefined ? VERIFIED : NOT_VERIFIED);
    }
    if (secretIndex !== undefined) {
      tallies.secrets.add(String(secretIndex), () => ({ [ATTR.secretIndex]: secretIndex }), 1);
    }
    if (message.lastChance === true) {
      const atRisk: Attributes = { [ATTR.errorType]: errorTypeValue ?? 'INTERNAL_ERROR' };
      if (eventType !== undefined) atRisk[ATTR.eventType] = eventType;
      if (attempt !== undefined) atRisk[ATTR.attempt] = attempt;
      instruments.endpointAtRisk.add(1, atRisk);
    }
  }

  private handlerHandlers(): Handlers {
    return {
      start: this.safely<HandlerMessage>('handler start', (message) => {
        const parent = this.parentContext(message.parent);
        const name = text(message.handlerName) || 'anonymous';
        const eventType = text(message.eventType, 256);
        const stale = message.skipped === 'stale';
        const span = this.tracer.startSpan(
          `handler ${name}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: {
              [ATTR.functionName]: name,
              [ATTR.handlerIndex]: number(message.index),
              [ATTR.eventType]: eventType,
              [ATTR.eventId]: text(message.eventId, 256),
              [ATTR.deliveryId]: text(message.deliveryId),
              [ATTR.handlerSkipped]: stale ? 'stale' : undefined,
            },
          },
          parent,
        );
        const step = this.track(message, span, parent);
        // A handler the ordering guard skipped starts and ends at once: it never ran.
        if (step && !stale && this.tallies && this.metricsOff !== true) {
          step.active = eventType ?? '';
          this.tallies.active.add(
            step.active,
            () => (eventType === undefined ? {} : { [ATTR.eventType]: eventType }),
            1,
          );
        }
      }),
      end: nothing,
      asyncStart: nothing,
      error: this.safely<HandlerMessage>('handler error', (message) => this.failed(message)),
      asyncEnd: this.safely<HandlerMessage>('handler end', (message) => {
        const skipped = skipReason(message);
        // A schema's refusal is still an error (the event is not handled until replayed), told by its code.
        const closed = this.close(
          message,
          () => (skipped === 'schema' ? 'SCHEMA_MISMATCH' : errorType(message.error)),
          skipped === 'schema' ? { [ATTR.handlerSkipped]: skipped } : undefined,
        );
        if (!closed) return;
        const { step, seconds } = closed;
        if (step.active !== undefined) this.tallies?.active.add(step.active, () => ({}), -1);
        const instruments = this.instruments;
        if (!instruments || this.metricsOff === true) return;
        const name = text(message.handlerName) || 'anonymous';
        const eventType = text(message.eventType, 256);
        if (skipped !== undefined) {
          const counted: Attributes = { [ATTR.skipReason]: skipped, [ATTR.functionName]: name };
          if (eventType !== undefined) counted[ATTR.eventType] = eventType;
          instruments.handlerSkipped.add(1, counted);
        }
        // A stale handler never ran: no duration.
        if (skipped === 'stale') return;
        const attributes: Attributes = {
          [ATTR.functionName]: name,
          [ATTR.handlerOutcome]: step.failed ? 'error' : 'ok',
          [ATTR.queued]: message.job !== undefined,
        };
        if (eventType !== undefined) attributes[ATTR.eventType] = eventType;
        instruments.handlerDuration.record(seconds, attributes);
      }),
    };
  }

  private enqueueHandlers(): Handlers {
    return {
      start: this.safely<EnqueueMessage>('send start', (message) => {
        const parent = this.parentContext(message.parent);
        const system = text(message.engine) || 'unknown';
        const destination = text(message.queueName);
        const eventId = text(message.eventId, 256);
        const span = this.tracer.startSpan(
          `send ${destination || system}`,
          {
            kind: SpanKind.PRODUCER,
            attributes: {
              [ATTR.messagingSystem]: system,
              [ATTR.messagingDestination]: destination,
              [ATTR.messagingOperation]: 'send',
              [ATTR.messageId]: eventId,
              [ATTR.eventType]: text(message.eventType, 256),
              [ATTR.eventId]: eventId,
              [ATTR.deliveryId]: text(message.deliveryId),
            },
          },
          parent,
        );
        if (!this.track(message, span)) return;
        const carrier: Record<string, string> = {};
        propagation.inject(trace.setSpan(parent, span), carrier);
        if (Object.keys(carrier).length > 0) message.traceContext = { ...message.traceContext, ...carrier };
      }),
      end: nothing,
      asyncStart: nothing,
      error: this.safely<EnqueueMessage>('send error', (message) => this.failed(message)),
      asyncEnd: this.safely<EnqueueMessage>('send end', (message) => {
        // A refused write resolves (core answers 503) with an `error` published for it.
        const closed = this.close(message, () => errorCode(message.error, 'QUEUE_UNAVAILABLE'));
        if (!closed) return;
        this.instruments?.enqueueDuration.record(closed.seconds, {
          [ATTR.messagingSystem]: text(message.engine) || 'unknown',
          [ATTR.outcome]: closed.step.failed ? 'rejected' : 'queued',
        });
      }),
    };
  }

  private jobHandlers(): Handlers {
    return {
      start: this.safely<JobMessage>('process start', (message) => {
        const extracted = propagation.extract(ROOT_CONTEXT, message.traceContext ?? {});
        const linked = trace.getSpanContext(extracted);
        const valid = linked !== undefined && trace.isSpanContextValid(linked);
        const parent = valid ? extracted : context.active();
        const job = message.job;
        const system = text(job?.engine) || 'unknown';
        // The queue the engine ran it from (`QueuedRun.queueName`), else the engine's name.
        const destination = text(job?.queueName) || system;
        const eventId = text(message.eventId, 256);
        const links: Link[] = valid ? [{ context: linked }] : [];
        const span = this.tracer.startSpan(
          `process ${destination}`,
          {
            kind: SpanKind.CONSUMER,
            links,
            attributes: {
              [ATTR.messagingSystem]: system,
              [ATTR.messagingDestination]: destination,
              [ATTR.messagingOperation]: 'process',
              [ATTR.messageId]: eventId,
              [ATTR.eventType]: text(message.eventType, 256),
              [ATTR.eventId]: eventId,
              [ATTR.deliveryId]: text(message.deliveryId),
              [ATTR.jobAttempt]: number(job?.attempt),
              [ATTR.jobMaxAttempts]: number(job?.maxAttempts),
            },
          },
          parent,
        );
        this.track(message, span, parent);
      }),
      end: nothing,
      asyncStart: nothing,
      error: this.safely<JobMessage>('process error', (message) => this.failed(message)),
      asyncEnd: this.safely<JobMessage>('process end', (message) => {
        const closed = this.close(message, () => errorCode(message.error, 'HANDLER_FAILED'));
        if (!closed) return;
        const { step, seconds } = closed;
        const attributes: Attributes = {
          [ATTR.messagingSystem]: text(message.job?.engine) || 'unknown',
          [ATTR.jobOutcome]: step.failed ? 'error' : 'ok',
        };
        const eventType = text(message.eventType, 256);
        if (eventType !== undefined) attributes[ATTR.eventType] = eventType;
        this.instruments?.jobDuration.record(seconds, attributes);
      }),
    };
  }

  private transactionHandlers(): Handlers {
    return {
      start: this.safely<TransactionMessage>('transaction start', (message) => {
        const eventType = text(message.eventType, 256);
        const span = this.tracer.startSpan(
          eventType ? `transaction ${eventType}` : 'transaction',
          {
            kind: SpanKind.INTERNAL,
            attributes: { [ATTR.eventType]: eventType || undefined, [ATTR.eventId]: text(message.eventId, 256) },
          },
          context.active(),
        );
        this.track(message, span);
      }),
      end: nothing,
      asyncStart: nothing,
      error: this.safely<TransactionMessage>('transaction error', (message) => this.failed(message)),
      asyncEnd: this.safely<TransactionMessage>('transaction end', (message) => {
        const result = text(message.result, 32);
        this.close(
          message,
          () => errorCode(message.error, errorType(message.error)),
          result === undefined ? undefined : { [ATTR.transactionResult]: result },
        );
      }),
    };
  }
}
