-- Appends one action unless its Idempotency-Key was already used: the check, the XADD and the
-- record in one call, under the layout's hash tag (so it works on Redis Cluster too). A participant's
-- records live in one hash per window ("generation"): a key is looked up in the current and the
-- previous one, so it is remembered at least one window and at most two; each hash expires when it
-- cannot be the previous one any more. One small hash per participant costs far less than one key
-- per record, and its length caps what one participant can make Redis hold.
-- KEYS[1]  the layout's action stream
-- KEYS[2]  this participant's records of the current window   KEYS[3] those of the previous window
-- ARGV[1]  MAXLEN (approximate trim)   ARGV[2] MINID (approximate trim: entries older than the retention)
-- ARGV[3]  the entry's field name      ARGV[4] the entry's JSON
-- ARGV[5]  the Idempotency-Key         ARGV[6] the action's fingerprint
-- ARGV[7]  when the current window's hash expires (ms since the epoch)
-- ARGV[8]  the most records one participant may make in one window
-- returns  {0, entry id} appended; {1} the same action was appended before; {2} the key was used
--          for another action; {3} the participant used as many keys as a window allows
local previous = redis.call('HGET', KEYS[2], ARGV[5]) or redis.call('HGET', KEYS[3], ARGV[5])
if previous then
  if previous == ARGV[6] then return {1} end
  return {2}
end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[8]) then return {3} end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', ARGV[3], ARGV[4])
redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[5], ARGV[6])
redis.call('PEXPIREAT', KEYS[2], ARGV[7])
return {0, id}
