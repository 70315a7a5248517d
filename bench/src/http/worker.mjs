// Child process: the queue worker of a queued server, configured by argv[2] (JSON
// `{ redisPort, queueName, concurrency }` for BullMQ, `{ store: 'pg-boss', postgresUrl, queueName,
// concurrency }` for pg-boss). It runs the same handler as the other servers through
// `queue.startWorker(webhooks, { concurrency })` and records, for every job, the time from its write
// (`context.job.queuedAt`, set when the server wrote it, just before the 202) to its handler's start.
// IPC: `{ cmd: 'stats' }` answers the handlers started so far and this process's CPU time;
// `{ cmd: 'reset' }` empties the lag histogram; `{ cmd: 'drain', until, timeoutMs }` waits until
// `until` handlers have started in all (or the timeout) and answers the stats with the histogram's
// percentiles; `{ cmd: 'close' }` stops the worker. Its first message is `{ ready: true }`.
import { serve } from '../children.mjs';
import { createWebhooks } from './apps.mjs';

// `archive` and `archiveName`: the inbox scenario's queued server with an archive, whose workers write
// each job's step to the same archive (as core's docs ask).
const {
  store = 'bullmq',
  redisPort,
  postgresUrl,
  queueName,
  concurrency,
  archive,
  archiveName,
} = JSON.parse(process.argv[2]);
/** Statements this process sent to Postgres so far (pg-boss's worker only). */
let queries;
/** Commands this process sent to Redis so far (BullMQ's worker only). */
let redisCommands;

/** Lag of each job in whole milliseconds (queuedAt and Date.now() are both ms): counts per value. */
let lags = new Map();
let started = 0;
/** The worker's archive writes that failed so far (with an archive). */
let failures;

function record(ms) {
  const bucket = Math.max(0, ms);
  lags.set(bucket, (lags.get(bucket) ?? 0) + 1);
}

/** p50, p99 and max of the histogram, in ms; undefined values when it is empty. */
function percentiles() {
  const values = [...lags.keys()].sort((a, b) => a - b);
  const n = values.reduce((sum, v) => sum + lags.get(v), 0);
  const at = (q) => {
    const rank = Math.ceil(q * n);
    let seen = 0;
    for (const v of values) {
      seen += lags.get(v);
      if (seen >= rank) return v;
    }
    return undefined;
  };
  return { n, p50: at(0.5), p99: at(0.99), max: values.at(-1) };
}

function stats() {
  const { user, system } = process.cpuUsage();
  return {
    started,
    cpu: user + system,
    archiveFailures: failures?.(),
    queries: queries?.(),
    redisCommands: redisCommands?.(),
  };
}

try {
  const created = await createWebhooks({
    store,
    redisPort,
    postgresUrl,
    queueName,
    archive,
    archiveName,
    handler: (_event, context) => {
      started++;
      record(Date.now() - context.job.queuedAt);
    },
  });
  const { webhooks, queue, archiveFailures } = created;
  failures = archiveFailures;
  queries = created.queries;
  redisCommands = created.redisCommands;
  const worker = queue.startWorker(webhooks, { concurrency });
  await worker.bullWorker?.waitUntilReady();
  serve(async ({ cmd, until, timeoutMs }) => {
    if (cmd === 'stats') return stats();
    if (cmd === 'reset') {
      lags = new Map();
      return stats();
    }
    if (cmd === 'drain') {
      const t0 = Date.now();
      while (started < until && Date.now() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 20));
      return { ...stats(), drainMs: Date.now() - t0, lag: percentiles() };
    }
    if (cmd === 'close') {
      await worker.close();
      // The queue (and the archive, the boss), as the server closes them.
      await created.close();
      return { closed: true };
    }
    throw new Error(`unknown command ${cmd}`);
  });
  process.send({ ready: true });
} catch (error) {
  process.send({ error: error?.stack ?? String(error) });
  process.exit(1);
}
