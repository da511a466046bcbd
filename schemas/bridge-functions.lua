#!lua name=audience_bridge_1
-- The venue bridge's Redis functions (FUNCTION LOAD), loaded by the gateway at start and by
-- `audiencectl bridge grant` on every master, and called by the bridge with FCALL: a bridge's user
-- may run these and no Lua of its own (no EVAL). Each bounds what a caller passes it (the entries
-- it writes to the show record, the rows it scans), whoever holds the bridge's password. The names
-- end in the library's version; schemas/bridge-functions.ts names them for both programs.
--!include show-record.lua

-- What a bridge may write to a show record at most: an entry's JSON, and the record's bound when
-- no gateway set one.
local ENTRY_MAX = 16384
local RECORD_MAX_BYTES = 16777216
local RECORD_MAX_RETENTION_MS = 31536000000
local SCAN_MAX = 10000
local VALUES_MAX = 256

local function bounded_number(text, max, what)
  local n = tonumber(text)
  if not n or n < 0 then error('ERR ' .. what .. ' is not a number') end
  return math.min(n, max)
end
local function bounded_text(text, max, what)
  if #text > max then error('ERR ' .. what .. ' is longer than ' .. max .. ' bytes') end
  return text
end

-- Counts the entries of a layout's stream that were trimmed (or deleted) before this bridge's group
-- read them, and sets the group's read counter right, so XINFO GROUPS' lag is the entries waiting
-- again. (Redis counts the group's reads one delivered entry at a time, so entries trimmed ahead of
-- the group would otherwise stay in its lag for ever, and be lost without a trace.)
-- KEYS[1]  the layout's action stream
-- ARGV[1]  this bridge's group   ARGV[2] the most entries after the group's position counted one by one
-- returns  {missed, waiting, last}: entries lost unread since the last call, entries in the stream not
--          yet delivered, the group's last-delivered-id; {0, -1} no such group; {0, -2, last} the group
--          is too far behind to count now
local function settle_trimmed(keys, args)
  local KEYS, ARGV = keys, { args[1], tostring(bounded_number(args[2], SCAN_MAX, 'the scan bound')) }
  local function field(t, name)
    for i = 1, #t, 2 do if t[i] == name then return t[i + 1] end end
    return nil
  end
  local function parse(id)
    local dash = string.find(id, '-', 1, true)
    return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
  end
  local function after(a, b)
    local am, as = parse(a)
    local bm, bs = parse(b)
    return am > bm or (am == bm and as > bs)
  end

  local stream = redis.call('XINFO', 'STREAM', KEYS[1])
  local group = nil
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if field(g, 'name') == ARGV[1] then group = g end
  end
  if not group then return {0, -1} end
  local last = field(group, 'last-delivered-id')
  local read = field(group, 'entries-read')
  local added = field(stream, 'entries-added')
  local first = field(stream, 'first-entry')
  local waiting
  if not first then
    waiting = 0
  elseif after(first[1], last) then
    waiting = field(stream, 'length')
  else
    local ahead = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', ARGV[2])
    if #ahead >= tonumber(ARGV[2]) then return {0, -2, last} end
    waiting = #ahead
  end
  local delivered = added - waiting
  local missed = 0
  if read then missed = delivered - read end
  if (not read) or missed ~= 0 then
    redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], last, 'ENTRIESREAD', delivered)
  end
  if missed < 0 then missed = 0 end
  return {missed, waiting, last}
end

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
local function fire_cue(keys, args)
  local ARGV = args
  local KEYS = keys
  bounded_text(ARGV[6], 64, "the bridge's id")
  bounded_text(ARGV[7], ENTRY_MAX / 2, 'the crowd value')
  ARGV[9] = bounded_number(ARGV[9], RECORD_MAX_RETENTION_MS, 'the retention')
  ARGV[10] = bounded_number(ARGV[10], RECORD_MAX_BYTES, 'the byte bound')
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
end

-- Samples a layout's crowd values into its show record: a control's value is recorded when it
-- differs from the last one recorded and that is at least the sample interval old, so bridges on
-- one layout record each value once a second at most between them, and a still crowd adds nothing.
-- KEYS[1]  the show record   KEYS[2] its state (v:<lid> last value JSON, at:<lid> when)
-- ARGV[1]  the sample interval (ms)   ARGV[2] the record's retention (ms) and ARGV[3] its byte
--          bound, when no gateway set them   ARGV[4..] per control: lid, then {"value":[...],"n":N}
-- returns  the values recorded
local function sample_crowd(keys, args)
  local ARGV = args
  local KEYS = keys
  if #ARGV > 3 + 2 * VALUES_MAX then error('ERR more than ' .. VALUES_MAX .. ' crowd values') end
  ARGV[2] = bounded_number(ARGV[2], RECORD_MAX_RETENTION_MS, 'the retention')
  ARGV[3] = bounded_number(ARGV[3], RECORD_MAX_BYTES, 'the byte bound')
  for i = 5, #ARGV, 2 do bounded_text(ARGV[i], ENTRY_MAX, 'a crowd value') end
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
end

redis.register_function('ac_settle_trimmed_1', settle_trimmed)
redis.register_function('ac_fire_cue_1', fire_cue)
redis.register_function('ac_sample_crowd_1', sample_crowd)
