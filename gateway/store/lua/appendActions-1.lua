-- Appends a batch of actions to a layout's stream, each as its own entry (the gateway sends the
-- actions it accepted for one layout while its previous call was in flight as one call).
-- KEYS[1]  the layout's action stream
-- ARGV[1]  MAXLEN (approximate trim)   ARGV[2] the entry's field name   ARGV[3..n] one entry's JSON each
-- returns  one element per entry, in order: the new entry id, or an error reply if that XADD failed
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', ARGV[2], ARGV[i])
end
return ids
