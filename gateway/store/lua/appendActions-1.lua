-- Appends a batch of actions to a layout's stream, each as its own entry (the gateway sends the
-- actions it accepted for one layout while its previous call was in flight as one call).
-- KEYS[1]  the layout's action stream
-- ARGV[1]  MAXLEN (approximate trim)   ARGV[2] the entry's field name   ARGV[3..n] one entry's JSON each
-- returns  one character per entry, in order: "1" appended, "0" that XADD failed (one short
--          string for the gateway's client to read, instead of an entry id per action)
local done = {}
for i = 3, #ARGV do
  local id = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', ARGV[2], ARGV[i])
  done[#done + 1] = (type(id) == 'table' and id.err) and '0' or '1'
end
return table.concat(done)
