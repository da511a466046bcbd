-- Claims a participant of a layout for one gateway process (participant-claims.ts): from now on
-- that process counts it in the crowd, keeps its budget and holds its sockets. The owner key holds
-- the process and when its claim's action or socket came ("<process> <ms>"). The claim is numbered
-- (one counter per layout), so a process that hears of a move knows whether it is newer than its
-- own claim. When another process held the participant, the move is published on that process's
-- sharded channel of the layout (and no other): it lets the participant go, hands over what it
-- held and, for a move made by a socket, closes its own sockets of the participant. A socket that
-- opened before the one that holds the participant elsewhere (their claims crossed) does not take
-- it: it is the older one, and is told to close; nor does a socket past the participant's opens a
-- minute (it closes, and the participant keeps the sockets it had). A claim number is never below
-- Redis's clock in ms, so numbers keep their order across a failover that lost the counter's last
-- increments (replication is asynchronous): the new master's first claim is numbered past them
-- (for claims of one layout up to 1,000 a second). A 'reclaim' (a process checking its claims
-- after a failover) is made only where the owner key is gone, is this process's, or names a
-- process whose claim came before this one's; otherwise it is told to let go.
-- KEYS[1]  the participant's owner   KEYS[2] the layout's claim counter
-- KEYS[3]  the participant's socket opens in the current minute
-- ARGV[1]  this process   ARGV[2] how long the claim lasts (ms)   ARGV[3] the processes' channels, less the process
-- ARGV[4]  the participant (sub)   ARGV[5] 'action', 'socket' (a socket opened: counted),
--          'refresh' (only made longer, and only if this process still holds it) or 'reclaim'
-- ARGV[6]  when the action or socket came (ms)   ARGV[7] the opens a minute a participant may make (a socket past them claims nothing)
-- returns  {the process that held it ('' none), this claim's number (0: none made), opens this minute,
--           1 if this socket is the older one, 2 if it is past the opens a minute, 3 if a reclaim found
--           a later claim of another process (no claim made in these three)}
local held = redis.call('GET', KEYS[1])
local prev, prevAt = nil, 0
if held then
  local gap = string.find(held, ' ', 1, true)
  if gap then
    prev = string.sub(held, 1, gap - 1)
    prevAt = tonumber(string.sub(held, gap + 1)) or 0
  else
    prev = held
  end
end
if ARGV[5] == 'refresh' then
  if prev == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return { prev or '', 0, 0, 0 }
end
local opens = 0
if ARGV[5] == 'socket' then
  opens = redis.call('INCR', KEYS[3])
  if opens == 1 then redis.call('PEXPIRE', KEYS[3], 60000) end
  if opens > tonumber(ARGV[7]) then return { prev or '', 0, opens, 2 } end
  if prev and prev ~= ARGV[1] and prevAt > tonumber(ARGV[6]) then return { prev, 0, opens, 1 } end
end
if ARGV[5] == 'reclaim' and prev and prev ~= ARGV[1] and prevAt >= tonumber(ARGV[6]) then return { prev, 0, 0, 3 } end
local seq = redis.call('INCR', KEYS[2])
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if seq < floor then
  seq = floor
  redis.call('SET', KEYS[2], seq)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[6], 'PX', ARGV[2])
if prev and prev ~= ARGV[1] then
  redis.call('SPUBLISH', ARGV[3] .. prev, cjson.encode({ m = ARGV[4], to = ARGV[1], seq = seq, socket = ARGV[5] == 'socket' }))
end
return { prev or '', seq, opens, 0 }
