// Child process: one archive (argv[2], JSON `{ kind: 'postgres' | 'redis', postgresUrl, redisPort }`)
// seeded with synthetic events and timed through its public `list()`, as the dashboard and
// `pixhook inbox list` call it. IPC: `{ cmd: 'seed', size }` adds events until the archive holds
// `size` (Postgres: one `INSERT … SELECT generate_series` into the events table; Redis: a Lua loop
// in redis-server writing RedisArchive's key layout, 10,000 events per script); `{ cmd: 'time', size,
// samples }` checks the pages (right events, right order, full) and answers the median time of each
// kind of page over `samples` calls, after two unmeasured ones; `{ cmd: 'close' }`.
//
// Event i (0-based): id `evt_<i, 8 digits>`, type `image.type<i % 10>`, outcome processed / failed /
// queued / dead-letter by i % 4, lastAt BASE + ⌊i / 2⌋ × 10 ms (two events per time: ties, ordered
// by id), one delivery with a 256-byte body of the HTTP rows' shape and three headers.
import { serve } from '../children.mjs';
import { bodyFrom, bodyTemplate } from '../payloads.mjs';

const { kind, postgresUrl, redisPort } = JSON.parse(process.argv[2]);

const TYPES = 10;
/** Two hours ago: every event is within the default 7-day retention. */
const BASE = Date.now() - 2 * 60 * 60 * 1000;
const LIMIT = 50;
const eventId = (i) => `evt_${String(i).padStart(8, '0')}`;
const lastAt = (i) => BASE + Math.floor(i / 2) * 10;
const BODY = Buffer.from(bodyFrom(bodyTemplate(256, 'ascii'), 1));
const HEADERS = {
  'content-type': 'application/json',
  'x-service-delivery': 'dlv_seeded',
  'x-service-signature': `t=1700000000,v1=${'0'.repeat(64)}`,
};
/** A filter to page with: one type in ten, and that type with one outcome (one event in twenty). */
const FILTER_TYPE = 'image.type3';
const FILTER_OUTCOME = 'failed';

let seeded = 0;
let archive;
let close;
let seed;
let memory = async () => undefined;

if (kind === 'postgres') {
  const [{ migrateArchive, PostgresArchive }, { default: pg }] = await Promise.all([
    import('@pixhook/postgres'),
    import('pg'),
  ]);
  const table = 'pixhook_inbox_list';
  const pool = new pg.Pool({ connectionString: postgresUrl, max: 4 });
  await migrateArchive(pool, { table });
  archive = new PostgresArchive(pool, { table, pruneIntervalMs: false });
  close = async () => {
    await archive.close();
    await pool.end();
  };
  seed = async (from, to) => {
    // The events table only: list() reads nothing else (timeline rows are read by get() and the
    // deliveryId filter).
    await pool.query(
      `INSERT INTO "${table}" (event_id, event_type, created, first_at, last_at, outcome, deliveries, bytes, kept, mode, body, headers)
       SELECT 'evt_' || lpad(i::text, 8, '0'), 'image.type' || (i % ${TYPES}), 1700000000,
         $1::bigint + (i / 2) * 10, $1::bigint + (i / 2) * 10,
         (ARRAY['processed', 'failed', 'queued', 'dead-letter'])[i % 4 + 1], 1, $4::int, $5::bigint, 'inline', $6::bytea, $7::json
       FROM generate_series($2::int, $3::int - 1) AS i`,
      [BASE, from, to, BODY.length, BODY.length + JSON.stringify(HEADERS).length, BODY, JSON.stringify(HEADERS)],
    );
    await pool.query(`ANALYZE "${table}"`);
  };
  memory = async () => Number((await pool.query(`SELECT pg_total_relation_size('"${table}"') AS n`)).rows[0].n);
} else {
  const [{ RedisArchive }, { Redis }] = await Promise.all([import('@pixhook/redis'), import('ioredis')]);
  const prefix = 'pixhook-bench-inbox-list';
  const client = new Redis({ host: '127.0.0.1', port: redisPort });
  archive = new RedisArchive(client, {
    prefix,
    pruneIntervalMs: false,
    maxEvents: 2_000_000,
    maxBytes: 16 * 1024 ** 3,
  });
  close = async () => {
    await archive.close();
    await client.quit();
  };
  const retention = String(7 * 24 * 60 * 60 * 1000);
  // The keys of RedisArchive's layout (packages/redis/src/archive-scripts.ts) that list() and get()
  // read, as its record script writes them for a new event's first delivery: the summary hash
  // e:<id>, b:<id> (headers, newline, body as base64), the sorted sets all / type / outcome, with
  // the retention as expiry. Not the timeline, d:<deliveryId> or the prune index (idx, bytes): list()
  // never reads them, and writing them too would double the seeding time (a million events must
  // seed within a minute on the bench's busy core).
  const SEED = `
local p, from, to, base, ret = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local kept, bodyBytes = ARGV[6], ARGV[7]
local outcomes = { 'processed', 'failed', 'queued', 'dead-letter' }
for i = from, to - 1 do
  local id = string.format('evt_%08d', i)
  local t = 'image.type' .. (i % ${TYPES})
  local o = outcomes[i % 4 + 1]
  local at = string.format('%.0f', base + math.floor(i / 2) * 10)
  local e = p .. 'e:' .. id
  redis.call('HSET', e, 'type', t, 'created', '1700000000', 'firstAt', at, 'lastAt', at, 'deliveries', 1,
    'bytes', bodyBytes, 'size', #kept, 'mode', 'inline', 'outcome', o)
  redis.call('PEXPIRE', e, ret)
  redis.call('SET', p .. 'b:' .. id, kept, 'PX', ret)
  redis.call('ZADD', p .. 'all', at, id)
  redis.call('ZADD', p .. 'type:' .. t, at, id)
  redis.call('ZADD', p .. 'outcome:' .. o, at, id)
end
return to - from
`;
  const kept = `${JSON.stringify(HEADERS)}\n${BODY.toString('base64')}`;
  seed = async (from, to) => {
    for (let start = from; start < to; start += 10_000) {
      const end = Math.min(to, start + 10_000);
      await client.eval(
        SEED,
        0,
        `{${prefix}}:`,
        String(start),
        String(end),
        String(BASE),
        retention,
        kept,
        String(BODY.length),
      );
    }
  };
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1]);
  // What the seeded events take: redis-server's memory now, less what it held before the first seed
  // (the cost part's queues and archives).
  const before = await usedMemory();
  memory = async () => (await usedMemory()) - before;
}

/** Median time of `call` in ms over `samples` calls, after two unmeasured ones. */
async function median(samples, call) {
  await call();
  await call();
  const times = [];
  for (let n = 0; n < samples; n++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  return times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

/** The pages timed, each checked once first; problems found are answered, not thrown. */
async function time(size, samples) {
  const problems = [];
  const check = (ok, what) => {
    if (!ok) problems.push(what);
  };
  const middle = lastAt(Math.floor(size / 2));
  const first = await archive.list({ limit: LIMIT });
  check(
    first.items.map((item) => item.eventId).join() ===
      Array.from({ length: LIMIT }, (_, k) => eventId(size - 1 - k)).join(),
    'the first page is not the newest 50 events, newest first',
  );
  check(first.next !== undefined, 'the first page has no next cursor');
  // A cursor half-way down, from the archive itself (the cursor is opaque).
  const deepCursor = (await archive.list({ limit: 1, until: middle })).next;
  const typeCursor = (await archive.list({ limit: 1, until: middle, type: FILTER_TYPE })).next;
  const deep = await archive.list({ limit: LIMIT, cursor: deepCursor });
  check(
    deep.items.length === LIMIT && deep.items.every((item) => item.lastAt < middle),
    'the deep page is not 50 events older than the middle',
  );
  const pages = {
    first: { limit: LIMIT },
    deep: { limit: LIMIT, cursor: deepCursor },
    type: { limit: LIMIT, type: FILTER_TYPE },
    typeDeep: { limit: LIMIT, type: FILTER_TYPE, cursor: typeCursor },
    typeOutcome: { limit: LIMIT, type: FILTER_TYPE, outcome: FILTER_OUTCOME },
  };
  for (const name of ['type', 'typeDeep', 'typeOutcome']) {
    const query = pages[name];
    const page = await archive.list(query);
    check(
      page.items.length === LIMIT &&
        page.items.every(
          (item) =>
            item.eventType === FILTER_TYPE &&
            (!query.outcome || item.outcome === query.outcome) &&
            (!query.cursor || item.lastAt < middle),
        ),
      `the ${name} page is not 50 matching events`,
    );
  }
  // The seeded layout is the archive's own: an event reads back whole.
  const one = await archive.get(eventId(7));
  check(
    one !== undefined &&
      Buffer.from(one.body).equals(BODY) &&
      one.eventType === 'image.type7' &&
      one.timeline.length <= 1,
    'a seeded event does not read back through get()',
  );
  const timings = {};
  for (const [name, query] of Object.entries(pages)) timings[name] = await median(samples, () => archive.list(query));
  return { problems, timings };
}

serve(async ({ cmd, size, samples }) => {
  if (cmd === 'seed') {
    const t0 = performance.now();
    if (size > seeded) await seed(seeded, size);
    seeded = Math.max(seeded, size);
    return { seconds: (performance.now() - t0) / 1000, memoryBytes: await memory() };
  }
  if (cmd === 'time') return time(size, samples);
  if (cmd === 'close') {
    await close();
    return { closed: true };
  }
  throw new Error(`unknown command ${cmd}`);
});
process.send({ ready: true });
