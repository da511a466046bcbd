-- One moderator's decision on one held text, once: the first decision takes the item out of the
-- queue; any later one (a second operator, a retry) changes nothing and is told the first. approve
-- appends the text to the layout's action stream as the participant's String action, stamped now
-- (Redis's clock); reject drops it; mute drops it and every other text the participant has queued,
-- and refuses the participant's Strings for ARGV[11] ms, through its renewals, until unmuted (the
-- layout's version is bumped so every gateway re-reads its muted participants). Each decision goes into the layout's show record.
-- KEYS[1]  the queue (sorted set)   KEYS[2] the items (hash)   KEYS[3] each participant's queued ids (hash)
-- KEYS[4]  decisions (hash: id -> JSON)   KEYS[5] decisions in order (sorted set: id -> at)
-- KEYS[6]  the layout's action stream   KEYS[7] muted participants (hash: sub -> until, ms)   KEYS[8] the layout hash
-- KEYS[9]  the show record   KEYS[10] its state
-- ARGV[1]  id   ARGV[2] approve | reject | mute   ARGV[3] who decided
-- ARGV[4]  the new entry's id   ARGV[5] the entry's field name   ARGV[6] MAXLEN (approximate trim)
-- ARGV[7]  the stream's retention (ms)   ARGV[8] decisions kept at most
-- ARGV[9]  the show record's retention (ms)   ARGV[10] its byte bound   ARGV[11] how long a mute lasts (ms)
-- returns  {1, decision JSON} decided now; {2, decision JSON} decided before; {0} no such item (never held, or expired)
--!include show-record.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local item = redis.call('HGET', KEYS[2], ARGV[1])
if not item then
  local before = redis.call('HGET', KEYS[4], ARGV[1])
  if before then return {2, before} end
  return {0}
end
item = cjson.decode(item)

local function take(id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
local function record(id, decision, it)
  local d = cjson.encode({ id = id, decision = decision, by = ARGV[3], at = now, sub = it.sub, lid = it.lid, text = it.text, heldAt = it.heldAt })
  redis.call('HSET', KEYS[4], id, d)
  redis.call('ZADD', KEYS[5], now, id)
  show_record_append(KEYS[9], KEYS[10], cjson.encode({ kind = 'moderation', decision = decision, item = id, by = ARGV[3], sub = it.sub, lid = it.lid, text = it.text }), ARGV[9], ARGV[10], true)
  return d
end

take(ARGV[1])
local others = {}
local kept = {}
for _, other in ipairs(cjson.decode(redis.call('HGET', KEYS[3], item.sub) or '[]')) do
  if other ~= ARGV[1] then
    if ARGV[2] == 'mute' then others[#others + 1] = other else kept[#kept + 1] = other end
  end
end
if #kept == 0 then redis.call('HDEL', KEYS[3], item.sub) else redis.call('HSET', KEYS[3], item.sub, cjson.encode(kept)) end

if ARGV[2] == 'approve' then
  local entry = cjson.encode({ v = 1, id = ARGV[4], layoutId = item.layoutId, lid = item.lid, address = item.address, type = 'String', value = item.text, ts = now })
  redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[6], '*', ARGV[5], entry)
  redis.call('XTRIM', KEYS[6], 'MINID', '~', (now - tonumber(ARGV[7])) .. '-0')
elseif ARGV[2] == 'mute' then
  for _, other in ipairs(others) do
    local o = redis.call('HGET', KEYS[2], other)
    take(other)
    if o then record(other, 'reject', cjson.decode(o)) end
  end
  local untilMs = math.max(now + tonumber(ARGV[11]), tonumber(redis.call('HGET', KEYS[7], item.sub) or '0'))
  redis.call('HSET', KEYS[7], item.sub, untilMs)
  redis.call('PEXPIREAT', KEYS[7], math.max(untilMs, redis.call('PEXPIRETIME', KEYS[7])))
  redis.call('HINCRBY', KEYS[8], 'version', 1)
end
local d = record(ARGV[1], ARGV[2], item)

local old = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[8])
if old > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, old - 1)) do redis.call('HDEL', KEYS[4], id) end
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, old - 1)
end
return {1, d}
