-- A layout's moderation queue and its newest decisions, read at one moment: a decision made on
-- another connection comes before or after the whole read, so every held text shows in the queue
-- or among the decisions, never in neither. Reads only.
-- KEYS[1]  the queue (sorted set)   KEYS[2] the items (hash)
-- KEYS[3]  decisions (hash: id -> JSON)   KEYS[4] decisions in order (sorted set: id -> at)
-- ARGV[1]  held at or after (ms): older texts have expired   ARGV[2] decisions returned at most
-- returns  {items JSON..., oldest first}, {decisions JSON..., newest first}
-- HMGET in slices: Lua unpacks at most about 8,000 values, and a queue may hold 100,000
local SLICE = 1000
local function values(hash, ids)
  local out = {}
  for first = 1, #ids, SLICE do
    for _, v in ipairs(redis.call('HMGET', hash, unpack(ids, first, math.min(first + SLICE - 1, #ids)))) do
      if v then out[#out + 1] = v end
    end
  end
  return out
end
local queued = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')
local decided = redis.call('ZREVRANGE', KEYS[4], 0, tonumber(ARGV[2]) - 1)
return { values(KEYS[2], queued), values(KEYS[3], decided) }
