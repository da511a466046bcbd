-- Claims a participant of a layout for one gateway process (participant-claims.ts): from now on
-- that process counts it in the crowd, keeps its budget and holds its sockets. The claim is
-- numbered (one counter per layout), so a process that hears of a move knows whether it is newer
-- than its own claim. When another process held the participant, the move is published on that
-- process's sharded channel of the layout (and no other): it lets the participant go, hands over
-- what it held and, for a move made by a socket, closes its own sockets of the participant.
-- KEYS[1]  the participant's owner (a string: the process)   KEYS[2] the layout's claim counter
-- KEYS[3]  the participant's socket opens in the current minute
-- ARGV[1]  this process   ARGV[2] how long the claim lasts (ms)   ARGV[3] the processes' channels, less the process
-- ARGV[4]  the participant (sub)   ARGV[5] 'action', 'socket' (a socket opened: counted) or
--          'refresh' (only made longer, and only if this process still holds it)
-- returns  {the process that held it ('' none), this claim's number (0 for a refresh), opens this minute}
if ARGV[5] == 'refresh' then
  local held = redis.call('GET', KEYS[1])
  if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return { held or '', 0, 0 }
end
local seq = redis.call('INCR', KEYS[2])
local prev = redis.call('SET', KEYS[1], ARGV[1], 'GET', 'PX', ARGV[2])
local opens = 0
if ARGV[5] == 'socket' then
  opens = redis.call('INCR', KEYS[3])
  if opens == 1 then redis.call('PEXPIRE', KEYS[3], 60000) end
end
if prev and prev ~= ARGV[1] then
  redis.call('SPUBLISH', ARGV[3] .. prev, cjson.encode({ m = ARGV[4], to = ARGV[1], seq = seq, socket = ARGV[5] == 'socket' }))
end
return { prev or '', seq, opens }
