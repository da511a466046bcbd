-- A layout's show record: what decided the show, appended by the scripts of the gateway (page
-- switches, moderation decisions) and of the bridges (cue firings, crowd samples) that include this
-- file (`--!include show-record.lua`). One stream entry per event, field `r` (JSON), its id the
-- moment (Redis's clock). Bounded twice at each append: entries older than the retention go, then
-- the oldest while the JSON held (counted in the state hash's `bytes`) is past the byte bound. A
-- gateway's append sets the layout's retention and bound (its SHOW_RECORD_* settings); a bridge's
-- uses what a gateway set last, or the defaults it passes.
local function show_record_append(stream, state, json, retentionMs, maxBytes, sets)
  if sets then
    redis.call('HSET', state, 'retentionMs', retentionMs, 'maxBytes', maxBytes)
  else
    local s = redis.call('HMGET', state, 'retentionMs', 'maxBytes')
    retentionMs = s[1] or retentionMs
    maxBytes = s[2] or maxBytes
  end
  retentionMs = tonumber(retentionMs)
  maxBytes = tonumber(maxBytes)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('XADD', stream, '*', 'r', json)
  local bytes = redis.call('HINCRBY', state, 'bytes', #json)
  local function drop(entries)
    if #entries == 0 then return end
    local ids, freed = {}, 0
    for i, e in ipairs(entries) do
      ids[i] = e[1]
      freed = freed + #e[2][2]
    end
    redis.call('XDEL', stream, unpack(ids))
    bytes = redis.call('HINCRBY', state, 'bytes', -freed)
  end
  -- what is older than the retention, up to 1,000 entries a call (a record idle for longer than
  -- that is gone whole: its keys expire with the retention)
  drop(redis.call('XRANGE', stream, '-', '(' .. string.format('%d', now - retentionMs) .. '-0', 'COUNT', 1000))
  -- then the oldest, while the record holds more than its bound
  for _ = 1, 100 do
    if bytes <= maxBytes then break end
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)
    if #first == 0 then break end
    drop(first)
  end
  redis.call('PEXPIRE', stream, retentionMs)
  redis.call('PEXPIRE', state, retentionMs)
end
