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
