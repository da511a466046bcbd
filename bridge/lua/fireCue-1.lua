-- Records a crowd cue's firing, unless the cue was re-armed or another bridge fired it first.
-- KEYS[1]  the layout's cue hash
-- ARGV[1]  lid   ARGV[2] the arm the bridge decided in ("<gen:page>.<gen:lid>")
-- ARGV[3]  the firings the bridge knows of in that arm   ARGV[4] the value   ARGV[5] now (ms)
-- ARGV[6]  the bridge's id
-- returns  {1, record} recorded: send it; {2, record} another bridge's firing came first: send
--          that one; {0, arm} re-armed meanwhile: nothing to send
local arm = (redis.call('HGET', KEYS[1], 'gen:page') or '0') .. '.' .. (redis.call('HGET', KEYS[1], 'gen:' .. ARGV[1]) or '0')
if arm ~= ARGV[2] then return {0, arm} end
local held = redis.call('HGET', KEYS[1], 'fired:' .. ARGV[1])
if held then
  local f = cjson.decode(held)
  if f.arm == arm and tostring(f.seq) ~= ARGV[3] then return {2, held} end
end
local record = string.format('{"arm":"%s","seq":%d,"value":%d,"at":%d,"by":%s}', arm, tonumber(ARGV[3]) + 1, tonumber(ARGV[4]), tonumber(ARGV[5]), cjson.encode(ARGV[6]))
redis.call('HSET', KEYS[1], 'fired:' .. ARGV[1], record)
return {1, record}
