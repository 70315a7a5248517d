/**
 * RedisArchive's Lua scripts. Every key is `{<prefix>}:…` (one hash tag, so one slot): `e:<id>` a
 * hash (the event's summary: small fields, so Redis keeps it compact), `b:<id>` its first
 * delivery's headers (JSON), a newline and its body (base64), `t:<id>` a list (its timeline, JSON entries), `all`, `type:<type>` and
 * `outcome:<outcome>` sorted sets (member: event id, score: lastAt), `d:<deliveryId>` the event id
 * of a delivery, `idx` a hash (event id → "<bytes kept> <type>", so a prune can undo an event whose
 * keys already expired), `bytes` the total kept, `replays` a list of requested event ids.
 */

/** Lua: `a < b` comparing bytes, as a sorted set orders equal scores (not `<`, which uses the locale). */
const BYTES_BEFORE = `
local function before(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`;

/**
 * Record: one atomic step. Creates the event on its first entry, keeps the body and headers of its
 * first delivery written (firstAt: its earliest delivery's time), appends the timeline entry, sets the outcome by `outcomeAfter`'s rule, moves the
 * event in the sorted sets to its lastAt (the latest entry's `at`, never backwards), counts the bytes.
 * KEYS: 1 e, 2 t, 3 all, 4 type, 5 idx, 6 bytes, 7-10 outcome:processed/failed/queued/dead-letter,
 * 11 d:<deliveryId> (a delivery) or e again (a step), 12 b.
 * ARGV: 1 id, 2 kind, 3 result, 4 at, 5 type, 6 timeline entry (JSON), 7 retention ms, 8 created
 * ('' when none), 9 mode, 10 body (base64), 11 headers (JSON), 12 body bytes.
 */
export const RECORD = `
local e, id, kind, result, at = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local outcomes = { processed = KEYS[7], failed = KEYS[8], queued = KEYS[9], ['dead-letter'] = KEYS[10] }
local before = redis.call('HGET', e, 'outcome')
local after
if result == 'duplicate' or result == 'in-flight' then
  after = before or (result == 'duplicate' and 'processed' or 'failed')
elseif result == 'queued' and kind == 'delivery' and before then
  after = before
else
  after = result
end
if not before then
  -- A new event, or one whose keys expired before a prune: undo what the index still counts.
  local stale = redis.call('HGET', KEYS[5], id)
  if stale then
    redis.call('DECRBY', KEYS[6], tonumber(string.match(stale, '^%d+')))
    for _, key in pairs(outcomes) do redis.call('ZREM', key, id) end
  end
  redis.call('DEL', KEYS[2])
  redis.call('HSET', e, 'type', ARGV[5], 'created', '', 'firstAt', at, 'lastAt', at, 'deliveries', 0,
    'bytes', 0, 'size', 0, 'mode', kind == 'job' and 'queued' or 'inline')
  redis.call('SET', KEYS[12], '{}\\n')
end
local size = #ARGV[6]
if kind == 'delivery' then
  if redis.call('HINCRBY', e, 'deliveries', 1) == 1 then
    redis.call('HSET', e, 'firstAt', at, 'created', ARGV[8], 'mode', ARGV[9], 'bytes', ARGV[12])
    redis.call('SET', KEYS[12], ARGV[11] .. '\\n' .. ARGV[10])
    size = size + #ARGV[10] + #ARGV[11]
  elseif tonumber(at) < tonumber(redis.call('HGET', e, 'firstAt')) then
    -- Deliveries written at once may land out of order: firstAt is the earliest.
    redis.call('HSET', e, 'firstAt', at)
  end
  redis.call('SET', KEYS[11], id, 'PX', ARGV[7])
end
local last = redis.call('HGET', e, 'lastAt')
if tonumber(at) > tonumber(last) then last = at end
redis.call('HSET', e, 'lastAt', last, 'outcome', after)
local kept = redis.call('HINCRBY', e, 'size', size)
redis.call('HSET', KEYS[5], id, kept .. ' ' .. redis.call('HGET', e, 'type'))
redis.call('INCRBY', KEYS[6], size)
redis.call('RPUSH', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[3], last, id)
redis.call('ZADD', KEYS[4], last, id)
if before and before ~= after and outcomes[before] then redis.call('ZREM', outcomes[before], id) end
redis.call('ZADD', outcomes[after], last, id)
redis.call('PEXPIRE', e, ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('PEXPIRE', KEYS[12], ARGV[7])
return after
`;

/** The hash fields of a summary, in the order list and get return them. */
export const SUMMARY_FIELDS = ['type', 'created', 'firstAt', 'lastAt', 'outcome', 'deliveries', 'bytes', 'mode'];

/**
 * Get: the event's summary fields, its timeline, and its headers and body; nil when it is not kept.
 * KEYS: 1 e, 2 t, 3 b.
 */
export const GET = `
local h = redis.call('HMGET', KEYS[1], ${SUMMARY_FIELDS.map((field) => `'${field}'`).join(', ')})
if not h[1] then return false end
return { h, redis.call('LRANGE', KEYS[2], 0, -1), redis.call('GET', KEYS[3]) }
`;

/**
 * List: one page, newest first (lastAt, then event id, both descending), by keyset: from the
 * position after the cursor, read the sorted set by rank (ZRANGE … REV) and keep the members that
 * match every filter, until `want` match or `budget` members were examined. Returns { items,
 * score, member }: items are { id, summary fields… }; score and member, when the budget ran out
 * first, say where the next call goes on.
 * KEYS: the candidate sorted sets (the narrowest is read).
 * ARGV: 1 key prefix ('{p}:'), 2 one ('' : scan; 'e' .. id : that event; 'd' .. id : a delivery's),
 * 3 cursor score ('' : none), 4 cursor member, 5 since (''), 6 until (''), 7 type ('' or '=' .. type),
 * 8 outcome ('' or '=' .. outcome), 9 want, 10 budget, 11 the event id a delivery's must be ('' or
 * '=' .. id).
 */
export const LIST = `${BYTES_BEFORE}
local p, one, cscore, cmember = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local since, till = tonumber(ARGV[5]), tonumber(ARGV[6])
local want, budget = tonumber(ARGV[9]), tonumber(ARGV[10])
local function match(id)
  local h = redis.call('HMGET', p .. 'e:' .. id, ${SUMMARY_FIELDS.map((field) => `'${field}'`).join(', ')})
  if not h[1] then return nil end
  if ARGV[7] ~= '' and '=' .. h[1] ~= ARGV[7] then return nil end
  if ARGV[8] ~= '' and '=' .. h[5] ~= ARGV[8] then return nil end
  local item = { id }
  for i = 1, #h do item[i + 1] = h[i] end
  return item
end
if one ~= '' then
  local id = string.sub(one, 2)
  if string.sub(one, 1, 1) == 'd' then id = redis.call('GET', p .. 'd:' .. id) end
  if not id or (ARGV[11] ~= '' and '=' .. id ~= ARGV[11]) then return { {} } end
  local item = match(id)
  if not item then return { {} } end
  local at = tonumber(item[5])
  if (since and at < since) or (till and at >= till) then return { {} } end
  if cscore ~= '' then
    local c = tonumber(cscore)
    if at > c or (at == c and not before(id, cmember)) then return { {} } end
  end
  return { { item } }
end
local key, smallest = KEYS[1], redis.call('ZCARD', KEYS[1])
for i = 2, #KEYS do
  local n = redis.call('ZCARD', KEYS[i])
  if n < smallest then key, smallest = KEYS[i], n end
end
local start = 0
if till then start = redis.call('ZCOUNT', key, ARGV[6], '+inf') end
if cscore ~= '' then
  local rank
  local s = redis.call('ZSCORE', key, cmember)
  if s and tonumber(s) == tonumber(cscore) then
    rank = redis.call('ZREVRANK', key, cmember) + 1
  else
    -- The cursor's event moved or went: find where it would stand among the ties of its score.
    local lo = redis.call('ZCOUNT', key, '(' .. cscore, '+inf')
    local hi = lo + redis.call('ZCOUNT', key, cscore, cscore)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if before(redis.call('ZRANGE', key, mid, mid, 'REV')[1], cmember) then hi = mid else lo = mid + 1 end
    end
    rank = lo
  end
  if rank > start then start = rank end
end
local items, examined, score, member = {}, 0, nil, nil
while examined < budget do
  local n = math.min(500, budget - examined)
  local chunk = redis.call('ZRANGE', key, start, start + n - 1, 'REV', 'WITHSCORES')
  for i = 1, #chunk, 2 do
    if since and tonumber(chunk[i + 1]) < since then return { items } end
    examined = examined + 1
    member, score = chunk[i], chunk[i + 1]
    local item = match(member)
    if item then
      items[#items + 1] = item
      if #items == want then return { items } end
    end
  end
  if #chunk < n * 2 then return { items } end
  start = start + n
end
return { items, score, member }
`;

/**
 * Prune: one batch. First the events whose lastAt is before the cutoff (the retention), then, while
 * more than maxEvents are kept or more than maxBytes, the oldest. Returns how many were deleted (at
 * most `batch`: call again while it returns `batch`).
 * KEYS: 1 all, 2 idx, 3 bytes. ARGV: 1 key prefix ('{p}:'), 2 cutoff, 3 maxEvents, 4 maxBytes, 5 batch.
 */
export const PRUNE = `
local p, batch = ARGV[1], tonumber(ARGV[5])
local removed = 0
local function drop(id)
  local entry = redis.call('HGET', KEYS[2], id)
  local size, etype = 0, redis.call('HGET', p .. 'e:' .. id, 'type')
  if entry then
    local space = string.find(entry, ' ', 1, true)
    size, etype = tonumber(string.sub(entry, 1, space - 1)), string.sub(entry, space + 1)
  end
  redis.call('ZREM', KEYS[1], id)
  if etype then redis.call('ZREM', p .. 'type:' .. etype, id) end
  for _, outcome in ipairs({ 'processed', 'failed', 'queued', 'dead-letter' }) do
    redis.call('ZREM', p .. 'outcome:' .. outcome, id)
  end
  redis.call('DEL', p .. 'e:' .. id, p .. 't:' .. id, p .. 'b:' .. id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('DECRBY', KEYS[3], size)
  removed = removed + 1
end
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], '-inf', '(' .. ARGV[2], 'BYSCORE', 'LIMIT', 0, batch)) do drop(id) end
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if excess > 0 and removed < batch then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, math.min(excess, batch - removed) - 1)) do drop(id) end
end
while removed < batch and tonumber(redis.call('GET', KEYS[3]) or '0') > tonumber(ARGV[4]) do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #oldest == 0 then
    redis.call('SET', KEYS[3], 0)
    break
  end
  drop(oldest[1])
end
return removed
`;

/**
 * Request replays: appends each id whose event is kept to the replay list. Returns how many.
 * KEYS: 1 replays, 2… e of each id. ARGV: the ids.
 */
export const REQUEST_REPLAY = `
local count = 0
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i])
    count = count + 1
  end
end
return count
`;
