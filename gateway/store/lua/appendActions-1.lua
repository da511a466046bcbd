-- Appends a batch of actions to a layout's stream, each as its own entry (the gateway sends the
-- actions it accepted for one layout while its previous call was in flight as one call), then trims
-- the stream once: to about MAXLEN entries, and drops what is older than the retention. One trim per
-- call instead of an XADD ... MAXLEN ~ per entry costs Redis a fifth less CPU an entry (2.78 against
-- 2.24 µs, batches of 190 entries of 190 bytes, AOF everysec, the two scripts interleaved on one
-- Redis, 2026-11-29), and nobody sees the stream between the XADDs and the trim.
-- KEYS[1]  the layout's action stream
-- ARGV[1]  MAXLEN (approximate trim)   ARGV[2] MINID (approximate trim: entries older than the retention)
-- ARGV[3]  the entry's field name      ARGV[4..n] one entry's JSON each
-- returns  {done, error}: done has one character per entry, in order, "1" appended, "0" that XADD
--          failed (one short string for the gateway's client to read, instead of an entry id per
--          action); error is the first failed XADD's error ("" when none failed), so the gateway can
--          tell a Redis that refuses writes (OOM) from other failures
local done = {}
local first = ''
for i = 4, #ARGV do
  local id = redis.pcall('XADD', KEYS[1], '*', ARGV[3], ARGV[i])
  if type(id) == 'table' and id.err then
    done[#done + 1] = '0'
    if first == '' then first = id.err end
  else
    done[#done + 1] = '1'
  end
end
redis.pcall('XTRIM', KEYS[1], 'MAXLEN', '~', ARGV[1])
redis.pcall('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])
return {table.concat(done), first}
