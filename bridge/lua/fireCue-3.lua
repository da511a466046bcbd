-- Records a crowd cue's firing, unless the cue was re-armed or another bridge fired it first; a
-- firing recorded goes into the layout's show record too, with the crowd at that moment.
-- KEYS[1]  the layout's cue hash   KEYS[2] the show record   KEYS[3] its state (same hash slot)
-- ARGV[1]  lid   ARGV[2] the arm the bridge decided in ("<gen:page>.<gen:lid>")
-- ARGV[3]  the firings the bridge knows of in that arm   ARGV[4] the value   ARGV[5] now (ms)
-- ARGV[6]  the bridge's id   ARGV[7] the crowd value (JSON array: a vote's counts, a fraction...)
-- ARGV[8]  participants counted   ARGV[9] the record's retention (ms) and ARGV[10] its byte bound,
--          when no gateway set them
-- returns  {1, record} recorded: send it; {2, record} another bridge's firing came first: send
--          that one; {0, arm} re-armed meanwhile: nothing to send
--!include show-record.lua
local arm = (redis.call('HGET', KEYS[1], 'gen:page') or '0') .. '.' .. (redis.call('HGET', KEYS[1], 'gen:' .. ARGV[1]) or '0')
if arm ~= ARGV[2] then return {0, arm} end
local held = redis.call('HGET', KEYS[1], 'fired:' .. ARGV[1])
if held then
  local f = cjson.decode(held)
  if f.arm == arm and tostring(f.seq) ~= ARGV[3] then return {2, held} end
end
local record = string.format('{"arm":"%s","seq":%d,"value":%d,"at":%d,"by":%s}', arm, tonumber(ARGV[3]) + 1, tonumber(ARGV[4]), tonumber(ARGV[5]), cjson.encode(ARGV[6]))
redis.call('HSET', KEYS[1], 'fired:' .. ARGV[1], record)
local entry = string.format('{"kind":"cue","lid":%d,"value":%d,"crowd":%s,"n":%d,"by":%s}', tonumber(ARGV[1]), tonumber(ARGV[4]), ARGV[7], tonumber(ARGV[8]), cjson.encode(ARGV[6]))
show_record_append(KEYS[2], KEYS[3], entry, ARGV[9], ARGV[10], false)
return {1, record}
