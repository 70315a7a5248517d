// Child process: what the ordering guard and a named handler add per delivery, in process.
// `webhooks.handle({ method, headers, body })` with one counting handler, on a `Webhooks` of its own
// per candidate: with `MemoryStore`, `RedisStore` and `PostgresStore`, each without an ordering (the
// baseline), with `ordering: { key }` (the Webhooks-wide guard: one `advance()` per delivery), and,
// on MemoryStore and RedisStore, with the handler named (`on(type, { id }, handler)`: its own record,
// a claim and a completion more per delivery). The same 1 KiB delivery as the HTTP rows, a new event
// id on every call; the ordering key cycles over 36^3 = 46,656 images (the event id's last three
// base-36 digits), and each event is newer than the last of its key (ids grow; `created` is the
// same), so every delivery runs its handler and moves its key's mark, as a stream of new events does.
import { MemoryStore, Webhooks } from '@pixhook/core';
import { serve } from '../children.mjs';
import { measure } from '../inprocess.mjs';
import { bodyFrom, bodyTemplate, pixhookHeaders, SECRET } from '../payloads.mjs';

const template = bodyTemplate(1024, 'ascii');
/** Images the ordering key cycles over: an event and the one KEYS ids earlier share a key. */
const KEYS = 36 ** 3;
// Above KEYS, so the check below can send an older event of the same key.
let nextId = KEYS * 2;

const ORDERING = { key: (event) => `image:${event.id.slice(-3)}` };

/** One `Webhooks` on `store` with one counting handler (named `count` when `named`). */
function server(store, { ordering, named }) {
  const state = { handled: 0, reported: [] };
  const webhooks = new Webhooks({ secret: SECRET, store, ...(ordering ? { ordering: ORDERING } : {}) });
  const handler = () => {
    state.handled++;
  };
  if (named) webhooks.on('image.created', { id: 'count' }, handler);
  else webhooks.on('image.created', handler);
  webhooks.onError((error) => {
    state.reported.push(error.code);
  });
  return { webhooks, state };
}

function delivery(n = nextId++) {
  const body = bodyFrom(template, n);
  return { method: 'POST', headers: pixhookHeaders(body), body };
}

function candidate({ id, label, baseline, store, ordering = false, named = false }) {
  const { webhooks, state } = server(store, { ordering, named });
  let before = 0;
  return {
    id,
    label,
    baseline,
    ordering,
    webhooks,
    state,
    prepare(n) {
      before = state.handled;
      return Array.from({ length: n }, () => delivery());
    },
    run: (input) => webhooks.handle(input),
    check(answers, n) {
      const bad = answers.filter((answer) => answer.status !== 200).length;
      if (bad > 0 || state.handled - before !== n || state.reported.length > 0) {
        throw new Error(
          `${id}: ${n} calls, ${bad} not 200, handler ran ${state.handled - before} times${state.reported.length > 0 ? `, reported ${[...new Set(state.reported)].join(', ')}` : ''}`,
        );
      }
    },
  };
}

/**
 * Checks a candidate once: a new event runs the handler; its redelivery is a duplicate; an older
 * event of the same key (KEYS ids earlier) is skipped with STALE_EVENT told to onError under the
 * guard, and runs without it.
 */
async function checkOnce(c) {
  const { state } = c;
  const n = nextId++;
  const before = state.handled;
  const first = await c.webhooks.handle(delivery(n));
  const again = await c.webhooks.handle(delivery(n));
  const older = await c.webhooks.handle(delivery(n - KEYS));
  const ran = state.handled - before;
  const expected = c.ordering ? { ran: 1, reported: 'STALE_EVENT' } : { ran: 2, reported: '' };
  if (
    first.status !== 200 ||
    !again.body.includes('"duplicate":true') ||
    older.status !== 200 ||
    ran !== expected.ran ||
    state.reported.join() !== expected.reported
  ) {
    throw new Error(
      `${c.id}: answered ${first.status}, ${again.body} to its redelivery and ${older.status} to an older event of its key; the handler ran ${ran} times (expected ${expected.ran}); reported ${state.reported.join(', ') || 'nothing'}`,
    );
  }
  state.reported.length = 0;
}

async function stores({ redisPort, postgresUrl }) {
  const made = { notes: [], close: [] };
  made.memory = () => new MemoryStore();
  if (redisPort) {
    const [{ RedisStore }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
    const client = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true });
    await client.connect();
    made.close.push(() => client.quit());
    let n = 0;
    made.redis = () => new RedisStore(client, { prefix: `bench:ordering:${process.pid}:${n++}:` });
    made.redisAdvance = typeof RedisStore.prototype.advance === 'function';
    if (!made.redisAdvance) made.notes.push('RedisStore has no advance() in its build: RedisStore + ordering skipped');
  }
  if (postgresUrl) {
    const [{ PostgresStore, migrate }, { default: pg }] = await Promise.all([
      import('@pixhook/postgres'),
      import('pg'),
    ]);
    const pool = new pg.Pool({ connectionString: postgresUrl, max: 4, idleTimeoutMillis: 0 });
    made.close.push(() => pool.end());
    let n = 0;
    made.postgres = async () => {
      const table = `pixhook_events_ordering_${n++}`;
      await migrate(pool, { table });
      return new PostgresStore(pool, { table });
    };
    made.postgresAdvance = typeof PostgresStore.prototype.advance === 'function';
    if (!made.postgresAdvance) {
      made.notes.push('PostgresStore has no advance() in its build: PostgresStore + ordering skipped');
    }
  }
  return made;
}

async function bench({ rounds, minCpuTimeMs, warmCpuTimeMs, redisPort, postgresUrl }) {
  const made = await stores({ redisPort, postgresUrl });
  try {
    const list = [
      candidate({ id: 'memory', label: 'MemoryStore, no ordering', baseline: 'memory', store: made.memory() }),
      candidate({
        id: 'memory-ordering',
        label: 'MemoryStore, `ordering: { key }`',
        baseline: 'memory',
        store: made.memory(),
        ordering: true,
      }),
      candidate({
        id: 'memory-named',
        label: "MemoryStore, the handler named (`{ id: 'count' }`)",
        baseline: 'memory',
        store: made.memory(),
        named: true,
      }),
    ];
    if (made.redis) {
      list.push(candidate({ id: 'redis', label: 'RedisStore, no ordering', baseline: 'redis', store: made.redis() }));
      if (made.redisAdvance) {
        list.push(
          candidate({
            id: 'redis-ordering',
            label: 'RedisStore, `ordering: { key }`',
            baseline: 'redis',
            store: made.redis(),
            ordering: true,
          }),
        );
      }
      list.push(
        candidate({
          id: 'redis-named',
          label: "RedisStore, the handler named (`{ id: 'count' }`)",
          baseline: 'redis',
          store: made.redis(),
          named: true,
        }),
      );
    }
    if (made.postgres) {
      list.push(
        candidate({
          id: 'postgres',
          label: 'PostgresStore, no ordering',
          baseline: 'postgres',
          store: await made.postgres(),
        }),
      );
      if (made.postgresAdvance) {
        list.push(
          candidate({
            id: 'postgres-ordering',
            label: 'PostgresStore, `ordering: { key }`',
            baseline: 'postgres',
            store: await made.postgres(),
            ordering: true,
          }),
        );
      }
    }
    for (const c of list) await checkOnce(c);
    const run = await measure(list, { rounds, minCpuTimeMs, warmCpuTimeMs, name: 'ordering' });
    return {
      candidates: list.map(({ id, label, baseline }) => ({ id, label, baseline })),
      calls: nextId - KEYS * 2,
      keys: KEYS,
      notes: made.notes,
      ...run,
    };
  } finally {
    for (const close of made.close) await close();
  }
}

serve(bench);
process.send({ ready: true });
