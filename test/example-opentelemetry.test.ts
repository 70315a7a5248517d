// examples/opentelemetry runs as a user runs it (`node --import ./instrumentation.mjs receiver.mjs`,
// on the built packages, with the OpenTelemetry Node SDK and its Prometheus exporter): it is sent
// signed, forged and duplicate deliveries over HTTP, its /metrics page is scraped over HTTP and its
// spans are read from the console exporter. The scrapes also check docs/operating.md and the Grafana
// dashboard: every metric the page documents is exposed under that name, and every label their
// queries use is a label the exporter writes.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { httpSend } from '@pixhook/test-helpers/adapters';
import { ensureBuilt } from '@pixhook/test-helpers/cli';
import { freePort } from '@pixhook/test-helpers/ports';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  alertQueries,
  dashboardQueries,
  documentedMetrics,
  inlineAlertQueries,
  labelNamesIn,
  PROMETHEUS_LABELS,
} from './prometheus-queries.js';

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));
const SECRET = 'whsec_otel_example_test_9f31a2';
/** How long the child may take to print what a test waits for, or a scrape to show a count: generous, for a busy machine. */
const CEILING_MS = 30_000;
const PROCESS_TEST_MS = 90_000;

// ---- the child process ----

interface Example {
  child: ChildProcess;
  port: number;
  metrics: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves once `text` is in the child's `stream`. */
  printed: (text: string, stream?: 'stdout' | 'stderr') => Promise<void>;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

/** Polls `read` until it returns something other than undefined (waiting for an event, with a ceiling). */
async function until<T>(what: () => string, read: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + CEILING_MS;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${CEILING_MS} ms: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startExample(env: Record<string, string> = {}): Promise<Example> {
  const { NODE_OPTIONS: _, OTEL_TRACES_EXPORTER: __, ...inherited } = process.env;
  const metricsPort = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', './opentelemetry/instrumentation.mjs', 'opentelemetry/receiver.mjs'],
    {
      cwd: EXAMPLES,
      env: {
        ...inherited,
        SIGNING_SECRET: SECRET,
        PORT: '0',
        METRICS_PORT: String(metricsPort),
        // The spans, printed: the test reads their names, ids and parents.
        OTEL_TRACES_EXPORTER: 'console',
        // Spans are exported as soon as they end, not after the batch processor's 5 s.
        OTEL_BSP_SCHEDULE_DELAY: '1',
        ...env,
      },
    },
  );
  running.add(child);
  const text = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    text.stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    text.stderr += chunk;
  });
  let exited = false;
  child.once('close', () => {
    exited = true;
  });
  const printed = async (wanted: string, stream: 'stdout' | 'stderr' = 'stdout') => {
    await until(
      () => `the example prints ${JSON.stringify(wanted)} on ${stream}\n${text[stream]}`,
      () => {
        if (text[stream].includes(wanted)) return true;
        if (exited) throw new Error(`the example ended without printing ${JSON.stringify(wanted)}:\n${text.stderr}`);
        return undefined;
      },
    );
  };
  const ready = await until(
    () => `the example's ready line\n${text.stderr}`,
    () => {
      if (exited) throw new Error(`the example exited:\n${text.stderr}`);
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)\/webhooks, metrics on (http:\/\/\S+)/.exec(text.stdout);
      return match ? { port: Number(match[1]), metrics: match[2] as string } : undefined;
    },
  );
  expect(ready.metrics).toBe(`http://127.0.0.1:${metricsPort}/metrics`);
  return { child, ...ready, stdout: () => text.stdout, stderr: () => text.stderr, printed };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const closed = once(child, 'close');
  child.kill('SIGTERM');
  const [code] = await closed;
  running.delete(child);
  return code as number | null;
}

// ---- the scrape ----

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** GET /metrics over HTTP, parsed from the Prometheus text format. */
async function scrape(example: Example): Promise<{ text: string; samples: Sample[]; types: Map<string, string> }> {
  const url = new URL(example.metrics);
  const answer = await httpSend(Number(url.port), { method: 'GET', path: url.pathname });
  expect(answer.status).toBe(200);
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of answer.text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!sample || line.startsWith('#')) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[key as string] = value as string;
    samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) });
  }
  return { text: answer.text, samples, types };
}

/** The sum of `name`'s samples whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((sample) => sample.name === name && Object.entries(labels).every(([k, v]) => sample.labels[k] === v))
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** Scrapes until `ready` holds of the samples (the last counts of a delivery may land after its answer). */
async function scrapeUntil(example: Example, what: string, ready: (samples: Sample[]) => boolean) {
  let last = '';
  return until(
    () => `${what}\n${last}`,
    async () => {
      const scraped = await scrape(example);
      last = scraped.text;
      return ready(scraped.samples) ? scraped : undefined;
    },
  );
}

/** Every metric and label name seen in a scrape of this file, for the check of the docs at its end. */
const seen = { metrics: new Set<string>(), labels: new Set<string>(), queued: false };
function remember(samples: Sample[]) {
  for (const { name, labels } of samples) {
    seen.metrics.add(name);
    for (const label of Object.keys(labels)) seen.labels.add(label);
  }
}

// ---- the spans ----

interface PrintedSpan {
  name: string;
  traceId: string;
  id: string;
  parentId: string | undefined;
  kind: number;
  text: string;
}

/** The spans the console exporter printed (Node's inspection of each ReadableSpan's export). */
function spans(stdout: string): PrintedSpan[] {
  const found: PrintedSpan[] = [];
  for (const [block] of stdout.matchAll(/^\{\n[\s\S]*?^\}$/gm)) {
    const field = (pattern: RegExp) => pattern.exec(block)?.[1];
    const name = field(/^ {2}name: '(.*)',$/m);
    const traceId = field(/^ {2}traceId: '(\w+)',$/m);
    const id = field(/^ {2}id: '(\w+)',$/m);
    if (name === undefined || traceId === undefined || id === undefined) continue;
    found.push({
      name,
      traceId,
      id,
      parentId: field(/parentSpanContext: \{[^}]*?spanId: '(\w+)'/),
      kind: Number(field(/^ {2}kind: (\d+),$/m)),
      text: block,
    });
  }
  return found;
}

/** Waits for a printed span of that name (or whose name matches), and `match`. */
async function spanNamed(example: Example, name: string | RegExp, match: (span: PrintedSpan) => boolean = () => true) {
  const named = (span: PrintedSpan) => (typeof name === 'string' ? span.name === name : name.test(span.name));
  return until(
    () => `a span ${name}\n${example.stdout()}`,
    () => spans(example.stdout()).find((span) => named(span) && match(span)),
  );
}

const SPAN_KIND = { INTERNAL: 0, SERVER: 1, PRODUCER: 3, CONSUMER: 4 };

// ---- the tests ----

describe('examples/opentelemetry', () => {
  beforeAll(() => ensureBuilt('@pixhook/opentelemetry'), 300_000);

  it(
    'receiver.mjs: counts processed, duplicate, forged and failed deliveries, the last-chance alarm and the matched secret on /metrics; the receive span is a child of the HTTP server span',
    async () => {
      const example = await startExample();
      const send = (signed: { headers: Record<string, string>; body: string }) =>
        httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });

      const image = createTestEvent('image.created');
      const signed = createSignedRequest(image, { secret: SECRET });
      expect((await send(signed)).status).toBe(200);
      expect((await send(signed)).json).toEqual({ received: true, duplicate: true });
      const forged = await send(
        createSignedRequest(createTestEvent('image.created'), { secret: 'whsec_attacker_guess' }),
      );
      expect(forged.status).toBe(400);
      expect((await send(createSignedRequest(createTestEvent('quota.warned'), { secret: SECRET }))).status).toBe(200);
      // Probably the service's 6th attempt (signed 9 h after the event was created), and its handler fails.
      const now = Math.floor(Date.now() / 1000);
      const failing = createTestEvent(
        'image.created',
        { id: 'img_plain', url: 'http://insecure.example/img.png' },
        { created: now - 9 * 3600 },
      );
      const risky = await send(createSignedRequest(failing, { secret: SECRET, timestamp: now }));
      expect(risky.status).toBe(500);
      expect(risky.json).toMatchObject({ error: { code: 'HANDLER_FAILED' } });
      // Logged by pixhook itself, always: the default line on console.error.
      await example.printed(`pixhook: ENDPOINT_AT_RISK (image.created ${failing.id}`, 'stderr');
      await example.printed('what is probably attempt 6 of 7', 'stderr');

      const { samples, text, types } = await scrapeUntil(
        example,
        'five deliveries counted',
        (s) => total(s, 'pixhook_deliveries_total') === 5,
      );
      remember(samples);
      const deliveries = (labels: Record<string, string>) => total(samples, 'pixhook_deliveries_total', labels);
      expect(types.get('pixhook_deliveries_total')).toBe('counter');
      expect(
        deliveries({
          pixhook_outcome: 'processed',
          http_response_status_code: '200',
          pixhook_event_type: 'image.created',
          pixhook_mode: 'inline',
        }),
      ).toBe(1);
      expect(deliveries({ pixhook_outcome: 'processed', pixhook_event_type: 'quota.warned' })).toBe(1);
      expect(deliveries({ pixhook_outcome: 'duplicate', http_response_status_code: '200' })).toBe(1);
      expect(
        deliveries({ pixhook_outcome: 'rejected', http_response_status_code: '400', error_type: 'SIGNATURE_MISMATCH' }),
      ).toBe(1);
      // A forged request's claimed type is not a label.
      const forgedSeries = samples.filter(
        (s) => s.name === 'pixhook_deliveries_total' && s.labels.error_type === 'SIGNATURE_MISMATCH',
      );
      expect(forgedSeries.map((s) => s.labels.pixhook_event_type)).toEqual([undefined]);
      expect(
        deliveries({
          pixhook_outcome: 'rejected',
          http_response_status_code: '500',
          error_type: 'HANDLER_FAILED',
          pixhook_event_type: 'image.created',
        }),
      ).toBe(1);

      expect(
        total(samples, 'pixhook_endpoint_at_risk_total', {
          pixhook_event_type: 'image.created',
          error_type: 'HANDLER_FAILED',
          pixhook_delivery_attempt: '6',
        }),
      ).toBe(1);
      expect(total(samples, 'pixhook_secret_matches_total', { pixhook_secret_index: '0' })).toBe(4);
      expect(total(samples, 'pixhook_secret_matches_total', { pixhook_secret_index: '1' })).toBe(0);

      expect(types.get('pixhook_handler_duration')).toBe('histogram');
      const handlerRuns = (labels: Record<string, string>) => total(samples, 'pixhook_handler_duration_count', labels);
      expect(
        handlerRuns({
          pixhook_event_type: 'image.created',
          code_function_name: 'makeThumbnail',
          pixhook_handler_outcome: 'ok',
        }),
      ).toBe(1);
      expect(
        handlerRuns({
          pixhook_event_type: 'image.created',
          code_function_name: 'makeThumbnail',
          pixhook_handler_outcome: 'error',
        }),
      ).toBe(1);
      expect(handlerRuns({ code_function_name: 'notifyBilling', pixhook_handler_outcome: 'ok' })).toBe(1);
      expect(total(samples, 'pixhook_verify_duration_count', { pixhook_verified: 'true' })).toBe(4);
      expect(total(samples, 'pixhook_verify_duration_count', { pixhook_verified: 'false' })).toBe(1);
      // The instruments' advice: buckets in seconds (the SDK's default starts at 5).
      expect(total(samples, 'pixhook_verify_duration_bucket', { pixhook_verified: 'true', le: '0.01' })).toBe(4);
      expect(total(samples, 'pixhook_handler_active')).toBe(0);
      expect(samples.some((s) => s.name === 'pixhook_handler_active')).toBe(true);

      // The spans: the HTTP server span, pixhook's receive span under it, the handler's under that.
      const receive = await spanNamed(example, 'receive image.created', (span) =>
        span.text.includes("'pixhook.outcome': 'processed'"),
      );
      expect(receive.kind).toBe(SPAN_KIND.CONSUMER);
      const server = spans(example.stdout()).find((span) => span.id === receive.parentId);
      expect(server?.kind).toBe(SPAN_KIND.SERVER);
      expect(server?.traceId).toBe(receive.traceId);
      const handler = await spanNamed(example, 'handler makeThumbnail', (span) => span.parentId === receive.id);
      expect(handler.traceId).toBe(receive.traceId);
      await spanNamed(example, 'receive webhook', (span) => span.text.includes('SIGNATURE_MISMATCH'));

      expect(await stop(example.child)).toBe(0);
      for (const output of [text, example.stdout(), example.stderr()]) {
        expect(output).not.toContain(SECRET);
        expect(output).not.toContain(signed.headers['x-service-signature']);
      }
    },
    PROCESS_TEST_MS,
  );
});

describeWithRedis('examples/opentelemetry with REDIS_URL (BullMQ)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    // The example's queue; the opentelemetry package was built above.
    ensureBuilt('@pixhook/bullmq');
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it(
    'queues, and its worker runs the handler in the same trace (send, then process); the queue gauges and job durations are on /metrics',
    async () => {
      const example = await startExample({ REDIS_URL: `redis://127.0.0.1:${redis.port}` });
      const event = createTestEvent('image.created');
      const signed = createSignedRequest(event, { secret: SECRET });
      const answer = await httpSend(example.port, { path: '/webhooks', headers: signed.headers, body: signed.body });
      expect(answer.status).toBe(202);
      await example.printed(`image.created ${event.data.object.id}`);

      const { samples } = await scrapeUntil(
        example,
        'the job counted',
        (s) => total(s, 'pixhook_job_duration_count') === 1 && s.some((one) => one.name === 'pixhook_queue_jobs'),
      );
      remember(samples);
      seen.queued = true;
      expect(
        total(samples, 'pixhook_deliveries_total', {
          pixhook_outcome: 'queued',
          http_response_status_code: '202',
          pixhook_mode: 'queued',
        }),
      ).toBe(1);
      expect(
        total(samples, 'pixhook_enqueue_duration_count', {
          messaging_system: 'bullmq',
          pixhook_outcome: 'queued',
        }),
      ).toBe(1);
      expect(
        total(samples, 'pixhook_job_duration_count', {
          messaging_system: 'bullmq',
          pixhook_event_type: 'image.created',
          pixhook_job_outcome: 'ok',
        }),
      ).toBe(1);
      expect(
        total(samples, 'pixhook_handler_duration_count', {
          pixhook_queued: 'true',
          pixhook_handler_outcome: 'ok',
        }),
      ).toBe(1);
      const states = samples.filter((s) => s.name === 'pixhook_queue_jobs').map((s) => s.labels.pixhook_queue_state);
      expect(new Set(states)).toEqual(new Set(['waiting', 'active', 'delayed', 'dead_letter']));
      expect(
        total(samples, 'pixhook_queue_jobs', { messaging_system: 'bullmq', pixhook_queue_state: 'dead_letter' }),
      ).toBe(0);

      const receive = await spanNamed(example, 'receive image.created');
      const send = await spanNamed(example, /^send /, (span) => span.parentId === receive.id);
      expect(send.kind).toBe(SPAN_KIND.PRODUCER);
      // Named after the queue it ran from, as the send span is.
      const run = await spanNamed(
        example,
        /^process /,
        (span) => span.name === send.name.replace(/^send /, 'process '),
      );
      expect(run.kind).toBe(SPAN_KIND.CONSUMER);
      expect(run.traceId).toBe(receive.traceId);
      expect(run.parentId).toBe(send.id);
      await spanNamed(example, 'handler makeThumbnail', (span) => span.parentId === run.id);

      expect(await stop(example.child)).toBe(0);
    },
    PROCESS_TEST_MS,
  );
});

describe('docs/operating.md and docs/grafana/pixhook.json against the scrapes above', () => {
  it("exposes every metric docs/operating.md's table names, under that name, and every label the dashboard's and the alerts' queries use", () => {
    const { names, histograms } = documentedMetrics();
    const queueOnly = ['pixhook_enqueue_duration', 'pixhook_job_duration', 'pixhook_queue_jobs'];
    for (const name of names) {
      if (!seen.queued && queueOnly.includes(name)) continue; // without Redis: describeWithRedis said why
      expect(seen.metrics, name).toContain(histograms.has(name) ? `${name}_bucket` : name);
    }
    const queries = [
      ...dashboardQueries().map(({ expr }) => expr),
      ...alertQueries().map(({ expr }) => expr),
      ...inlineAlertQueries(),
    ];
    for (const expr of queries) {
      if (!seen.queued && queueOnly.some((name) => expr.includes(name))) continue;
      for (const label of labelNamesIn(expr)) {
        if (!PROMETHEUS_LABELS.has(label)) expect(seen.labels, `${label} in ${expr}`).toContain(label);
      }
    }
  });
});
