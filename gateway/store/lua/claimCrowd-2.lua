-- Claims a participant of a layout's crowd for one gateway process (crowd-claims.ts): that process
-- counts it from now on. The claim is numbered (one counter per layout), so a process that hears of
-- a move knows whether it is newer than its own claim. When another process held the claim, the
-- move is published on that process's sharded channel for the layout (and no other): it lets the
-- participant go and hands over what it held.
-- KEYS[1]  the participant's owner (a string: the process)   KEYS[2] the layout's claim counter
-- ARGV[1]  this process   ARGV[2] how long the claim lasts (ms)   ARGV[3] the processes' moves channels, less the process
-- ARGV[4]  the participant (sub)
-- returns  {the process that held it ('' none), this claim's number}
local seq = redis.call('INCR', KEYS[2])
local prev = redis.call('SET', KEYS[1], ARGV[1], 'GET', 'PX', ARGV[2])
if prev and prev ~= ARGV[1] then
  redis.call('SPUBLISH', ARGV[3] .. prev, cjson.encode({ m = ARGV[4], to = ARGV[1], from = prev, seq = seq }))
end
return { prev or '', seq }
