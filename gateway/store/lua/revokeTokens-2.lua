-- Revokes a layout's audience tokens: all of them minted before a time, or one participant's (its
-- `sub`). Kept with the layout (its hash and a hash of revoked participants, one hash tag), and the
-- layout's version is bumped, so every gateway re-reads it (at once by the invalidation message, at
-- the latest at its periodic re-check). A later cut-off replaces an earlier one; never the reverse.
-- KEYS[1]  the layout hash   KEYS[2] the layout's revoked participants (sub -> revokedAt)
-- ARGV[1]  'before' or 'sub'   ARGV[2] the cut-off (ms) or the sub   ARGV[3] now (ms)
-- ARGV[4]  how long a revoked participant is remembered (ms: the longest a token can live)
-- returns  {1, the cut-off in force} or {1, revokedAt}; {0} no such layout
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
if ARGV[1] == 'before' then
  local held = tonumber(redis.call('HGET', KEYS[1], 'tokensRevokedBefore') or '0')
  local cut = tonumber(ARGV[2])
  if cut > held then
    redis.call('HSET', KEYS[1], 'tokensRevokedBefore', ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'version', 1)
    return {1, ARGV[2]}
  end
  return {1, tostring(held)}
end
local at = redis.call('HGET', KEYS[2], ARGV[2])
if not at then
  at = ARGV[3]
  redis.call('HSET', KEYS[2], ARGV[2], at)
  redis.call('HINCRBY', KEYS[1], 'version', 1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {1, at}
