-- Puts a participant's text in the layout's moderation queue, bounded three ways: items older than
-- the hold time expire, a participant past its share loses its own oldest, and a queue at its bound
-- takes no text that would need a new place (it is refused: the caller answers 429). So a flood,
-- however many participants it comes from, never pushes out a text already held: only a decision,
-- the hold time or the participant's own share takes one out. An item id already queued (an
-- Idempotency-Key sent again) is not added twice.
-- KEYS[1]  the queue (sorted set: id -> held at, ms)   KEYS[2] the items (hash: id -> JSON)
-- KEYS[3]  each participant's queued ids (hash: sub -> JSON array, oldest first)
-- ARGV[1]  id   ARGV[2] sub   ARGV[3] the item's JSON   ARGV[4] now (ms)
-- ARGV[5]  items per layout at most   ARGV[6] items per participant at most   ARGV[7] hold time (ms)
-- returns  {1 added, or 0 already queued, or 2 refused (the queue is full), expired, dropped for the participant's share}
local function forget(id)
  local item = redis.call('HGET', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  if not item then return end
  local sub = cjson.decode(item).sub
  local ids = cjson.decode(redis.call('HGET', KEYS[3], sub) or '[]')
  local kept = {}
  for _, other in ipairs(ids) do if other ~= id then kept[#kept + 1] = other end end
  if #kept == 0 then redis.call('HDEL', KEYS[3], sub) else redis.call('HSET', KEYS[3], sub, cjson.encode(kept)) end
end

local now = tonumber(ARGV[4])
local expired = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[7])), 'LIMIT', 0, 1000)) do
  forget(id)
  expired = expired + 1
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {0, expired, 0} end

local mine = cjson.decode(redis.call('HGET', KEYS[3], ARGV[2]) or '[]')
-- a full queue: only a participant at its share may add, in place of its own oldest
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) and #mine < tonumber(ARGV[6]) then return {2, expired, 0} end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
mine[#mine + 1] = ARGV[1]
redis.call('HSET', KEYS[3], ARGV[2], cjson.encode(mine))

local share = 0
while #mine > tonumber(ARGV[6]) do
  forget(mine[1])
  table.remove(mine, 1)
  share = share + 1
end
return {1, expired, share}
