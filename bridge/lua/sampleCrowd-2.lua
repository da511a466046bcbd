-- Samples a layout's crowd values into its show record: a control's value is recorded when it
-- differs from the last one recorded and that is at least the sample interval old, so bridges on
-- one layout record each value once a second at most between them, and a still crowd adds nothing.
-- KEYS[1]  the show record   KEYS[2] its state (v:<lid> last value JSON, at:<lid> when)
-- ARGV[1]  the sample interval (ms)   ARGV[2] the record's retention (ms) and ARGV[3] its byte
--          bound, when no gateway set them   ARGV[4..] per control: lid, then {"value":[...],"n":N}
-- returns  the values recorded
--!include show-record.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local recorded = 0
for i = 4, #ARGV - 1, 2 do
  local lid = ARGV[i]
  local value = ARGV[i + 1]
  if redis.call('HGET', KEYS[2], 'v:' .. lid) ~= value and now - tonumber(redis.call('HGET', KEYS[2], 'at:' .. lid) or '0') >= tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[2], 'v:' .. lid, value, 'at:' .. lid, now)
    show_record_append(KEYS[1], KEYS[2], '{"kind":"crowd","lid":' .. string.format('%d', tonumber(lid)) .. ',' .. string.sub(value, 2), ARGV[2], ARGV[3], false)
    recorded = recorded + 1
  end
end
return recorded
