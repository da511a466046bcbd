-- Appends one action unless its Idempotency-Key was already used: the check, the XADD and the
-- record in one call, under the layout's hash tag (so it works on Redis Cluster too).
-- KEYS[1]  the layout's action stream   KEYS[2] the key's record (layout:{id}:once:<sub>:<key>)
-- ARGV[1]  MAXLEN (approximate trim)   ARGV[2] the entry's field name   ARGV[3] the entry's JSON
-- ARGV[4]  the action's fingerprint    ARGV[5] the record's lifetime in seconds
-- returns  {0, entry id} appended; {1} the same action was appended before; {2} the key was used for another action
local previous = redis.call('GET', KEYS[2])
if previous then
  if previous == ARGV[4] then return {1} end
  return {2}
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', ARGV[2], ARGV[3])
redis.call('SET', KEYS[2], ARGV[4], 'EX', ARGV[5])
return {0, id}
