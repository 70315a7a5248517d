/** The value a completed event's key holds; a claim holds its claim token instead. */
export const COMPLETED = 'completed';

/**
 * Starts the value a key holds when claims that failed were abandoned (see `ABANDON`): then the
 * tokens of those claims, separated by spaces. Tokens never hold a space.
 */
export const ABANDONED = 'abandoned:';

/**
 * Claim: one round trip and atomic, so no other instance can slip in between the `SET NX` and the
 * `GET` that tells an in-flight claim from a completed event. A key that holds abandoned claims is
 * free, except to those very claims arriving late (`'abandoned'`: nobody waits for that reply).
 * KEYS[1] = key, ARGV[1] = token, ARGV[2] = in-flight TTL in ms.
 */
export const CLAIM = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end
local value = redis.call('GET', KEYS[1])
if value == '${COMPLETED}' then return 'completed' end
if string.sub(value, 1, ${ABANDONED.length}) == '${ABANDONED}' then
  if string.find(' ' .. string.sub(value, ${ABANDONED.length + 1}) .. ' ', ' ' .. ARGV[1] .. ' ', 1, true) then
    return 'abandoned'
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 'claimed'
end
return 'in-flight'
`;

/**
 * Complete: marks the event processed when the key still holds the caller's token, or nothing (the
 * claim expired and nobody took it since: the work is done all the same). Another instance's claim
 * is left alone. Returns 0 only in that case.
 * KEYS[1] = key, ARGV[1] = token, ARGV[2] = completed TTL in ms.
 */
export const COMPLETE = `
local value = redis.call('GET', KEYS[1])
if value == '${COMPLETED}' then return 1 end
if value == false or value == ARGV[1] or string.sub(value, 1, ${ABANDONED.length}) == '${ABANDONED}' then
  redis.call('SET', KEYS[1], '${COMPLETED}', 'PX', ARGV[2])
  return 1
end
return 0
`;

/**
 * Release: deletes the claim only when it is still the caller's, so an instance whose claim expired
 * cannot release the claim another instance holds now.
 * KEYS[1] = key, ARGV[1] = token.
 */
export const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Abandon: the release of a claim whose reply never came (Redis failed it, or did not answer in
 * time), which may still land later: a client may send it again after the release, as an ioredis
 * `Cluster` does with the commands it retries on another node during a failover. Deletes the claim
 * when it landed already; when the key is free, keeps the token as abandoned (for the in-flight
 * TTL) so that the claim, landing late, takes nothing (`CLAIM` answers it 'abandoned'); any other
 * claim takes the key as if it were free. Another delivery's claim, or a completion, is left alone.
 * KEYS[1] = key, ARGV[1] = token, ARGV[2] = in-flight TTL in ms.
 */
export const ABANDON = `
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then return redis.call('DEL', KEYS[1]) end
if value == false then
  redis.call('SET', KEYS[1], '${ABANDONED}' .. ARGV[1], 'PX', ARGV[2])
elseif string.sub(value, 1, ${ABANDONED.length}) == '${ABANDONED}' then
  redis.call('SET', KEYS[1], value .. ' ' .. ARGV[1], 'PX', ARGV[2])
end
return 0
`;

/**
 * Extend: renews the claim for another in-flight TTL only while it is still the caller's, so a run
 * whose claim was taken over learns it (0) instead of stretching someone else's claim.
 * KEYS[1] = key, ARGV[1] = token, ARGV[2] = in-flight TTL in ms.
 */
export const EXTEND = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/**
 * Advance: the ordering guard's compare-and-set (`IdempotencyStore.advance`), one round trip. The
 * mark is a string, `<version> <event id>`: the version as JavaScript writes a number (the shortest
 * text that reads back as the same double), so `tonumber` gives the very number core compared. The
 * event is current when its version is greater, or equal with an event id that is not smaller
 * (core's `isCurrent`); then it becomes the mark, for the completed TTL. Event ids are compared
 * byte by byte (Lua's `<` on strings follows the server's locale): for the ASCII ids the service
 * sends that is JavaScript's code-unit order; beyond ASCII it is UTF-8's byte order, as Postgres'
 * `COLLATE "C"`.
 * KEYS[1] = mark key, ARGV[1] = version, ARGV[2] = event id, ARGV[3] = completed TTL in ms.
 */
export const ADVANCE = `
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local mark = redis.call('GET', KEYS[1])
if mark then
  local space = string.find(mark, ' ', 1, true)
  local version, markVersion = tonumber(ARGV[1]), tonumber(string.sub(mark, 1, space - 1))
  if version < markVersion or (version == markVersion and before(ARGV[2], string.sub(mark, space + 1))) then
    return 'stale'
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[3])
return 'current'
`;
