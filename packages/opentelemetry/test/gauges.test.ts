/**
 * The `pixhook.queue.jobs` gauge over the `queues` option and `observeQueue()`, with the real SDK:
 * a queue that fails or never answers is skipped, never thrown; and the instrumentation's API.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  INSTRUMENTATION_NAME,
  INSTRUMENTATION_VERSION,
  PixhookInstrumentation,
  type QueueCounts,
  type QueueWithCounts,
} from '../src/index.js';
import { type Point, startOtel } from './helpers/otel.js';

const fixed = (engine: string, queueName: string | undefined, counts: QueueCounts): QueueWithCounts => ({
  engine,
  ...(queueName === undefined ? {} : { queueName }),
  counts: async () => counts,
});

const gauge = (points: Point[]) =>
  points
    .filter((point) => point.name === 'pixhook.queue.jobs')
    .map((point): Record<string, unknown> => ({ ...point.attributes, value: point.value }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

const states = (system: string, name: string, counts: QueueCounts) =>
  [
    ['active', counts.active],
    ['dead_letter', counts.deadLetter],
    ['delayed', counts.delayed],
    ['waiting', counts.waiting],
  ].map(([state, value]) => ({
    'messaging.system': system,
    'messaging.destination.name': name,
    'pixhook.queue.state': state,
    value,
  }));

describe('pixhook.queue.jobs', () => {
  it('reports each state of the configured and the observed queues; a failing, throwing or hung queue is skipped; observing stops', async () => {
    const bull = { waiting: 3, active: 1, delayed: 2, deadLetter: 5 };
    const boss = { waiting: 0, active: 0, delayed: 0, deadLetter: 1 };
    let hungCalls = 0;
    const otel = startOtel(
      {
        queues: [
          fixed('bullmq', 'webhooks', bull),
          { engine: 'bullmq', queueName: 'down', counts: () => Promise.reject(new Error('ECONNREFUSED')) },
          {
            engine: 'bullmq',
            queueName: 'throws',
            counts: () => {
              throw new Error('sync');
            },
          },
        ],
      },
      { delta: true },
    );
    try {
      const stop = otel.instrumentation.observeQueue(fixed('pg-boss', undefined, boss));
      const stopHung = otel.instrumentation.observeQueue({
        engine: 'bullmq',
        queueName: 'hung',
        counts: () => {
          hungCalls++;
          return new Promise<QueueCounts>(() => {});
        },
      });
      const started = performance.now();
      const points = await otel.collect();
      // The hung queue is waited for 5 s at most, then skipped.
      expect(performance.now() - started).toBeLessThan(15_000);
      expect(hungCalls).toBe(1);
      expect(gauge(points)).toEqual(
        [...states('bullmq', 'webhooks', bull), ...states('pg-boss', 'pg-boss', boss)].sort((a, b) =>
          JSON.stringify(a).localeCompare(JSON.stringify(b)),
        ),
      );
      stop();
      stopHung();
      const after = gauge(await otel.collect());
      expect(after.filter((point) => point['messaging.system'] === 'pg-boss')).toEqual([]);
      expect(after.filter((point) => point['messaging.destination.name'] === 'webhooks')).toHaveLength(4);
    } finally {
      await otel.shutdown();
    }
  }, 30_000);

  it('counts that are not numbers are left out, and a disabled instrumentation reports nothing', async () => {
    const otel = startOtel(
      {
        queues: [
          {
            engine: 'custom',
            counts: async () =>
              ({ waiting: Number.NaN, active: -1, delayed: '2', deadLetter: 4 }) as unknown as QueueCounts,
          },
        ],
      },
      { delta: true },
    );
    try {
      expect(gauge(await otel.collect())).toEqual([
        {
          'messaging.system': 'custom',
          'messaging.destination.name': 'custom',
          'pixhook.queue.state': 'dead_letter',
          value: 4,
        },
      ]);
      otel.instrumentation.disable();
      expect(gauge(await otel.collect())).toEqual([]);
    } finally {
      await otel.shutdown();
    }
  });
});

describe('the instrumentation', () => {
  it('is named @pixhook/opentelemetry, at its package version, and patches no module', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      name: string;
      version: string;
    };
    const instrumentation = new PixhookInstrumentation({ enabled: false });
    expect([instrumentation.instrumentationName, instrumentation.instrumentationVersion]).toEqual([
      manifest.name,
      manifest.version,
    ]);
    expect([INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION]).toEqual([manifest.name, manifest.version]);
    expect(instrumentation.getModuleDefinitions()).toEqual([]);
    expect(instrumentation.getConfig()).toMatchObject({ enabled: false, queues: [] });
  });

  it('refuses queues without counts() with a pixhook: message', () => {
    expect(() => new PixhookInstrumentation({ queues: {} as never })).toThrow(/^pixhook: .*`queues` must be an array/);
    expect(() => new PixhookInstrumentation({ queues: [{ enqueue() {} }] as never })).toThrow(
      /^pixhook: PixhookInstrumentation: queues\[0\] has no counts\(\) method/,
    );
    const instrumentation = new PixhookInstrumentation({ enabled: false });
    expect(() => instrumentation.observeQueue(null as never)).toThrow(/^pixhook: observeQueue\(queue\): /);
    expect(() => instrumentation.setConfig({ queues: [1] as never })).toThrow(/^pixhook: /);
  });
});
