-- Counts the entries of a layout's stream that were trimmed (or deleted) before this bridge's group
-- read them, and sets the group's read counter right, so XINFO GROUPS' lag is the entries waiting
-- again. (Redis counts the group's reads one delivered entry at a time, so entries trimmed ahead of
-- the group would otherwise stay in its lag for ever, and be lost without a trace.)
-- KEYS[1]  the layout's action stream
-- ARGV[1]  this bridge's group   ARGV[2] the most entries after the group's position counted one by one
-- returns  {missed, waiting, last}: entries lost unread since the last call, entries in the stream not
--          yet delivered, the group's last-delivered-id; {0, -1} no such group; {0, -2, last} the group
--          is too far behind to count now
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
