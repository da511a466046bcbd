-- Mutes a participant of a layout (no text of theirs at hand): their Strings are refused until the
-- given time, the longest their token can live. The layout's version is bumped so every gateway
-- re-reads its muted participants. A later time replaces an earlier one; never the reverse.
-- KEYS[1]  muted participants (hash: sub -> until, ms)   KEYS[2] the layout hash
-- ARGV[1]  sub   ARGV[2] until (ms)
-- returns  the time the participant is muted until; 0 no such layout
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local untilMs = math.max(tonumber(ARGV[2]), tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0'))
redis.call('HSET', KEYS[1], ARGV[1], untilMs)
redis.call('PEXPIREAT', KEYS[1], math.max(untilMs, redis.call('PEXPIRETIME', KEYS[1])))
redis.call('HINCRBY', KEYS[2], 'version', 1)
return untilMs
