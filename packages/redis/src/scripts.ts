/** The value a completed event's key holds; a claim holds its claim token instead. */
export const COMPLETED = 'completed';

/**
 * Claim: one round trip and atomic, so no other instance can slip in between the `SET NX` and the
 * `GET` that tells an in-flight claim from a completed event.
 * KEYS[1] = key, ARGV[1] = token, ARGV[2] = in-flight TTL in ms.
 */
export const CLAIM = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end
if redis.call('GET', KEYS[1]) == '${COMPLETED}' then return 'completed' end
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
if value == false or value == ARGV[1] then
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
