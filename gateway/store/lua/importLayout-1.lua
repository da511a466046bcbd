-- Creates or replaces a layout, refusing one that belongs to another team.
-- KEYS[1]  the layout hash
-- ARGV[1]  teamId   ARGV[2] name   ARGV[3] activePageId   ARGV[4] pages (JSON)   ARGV[5] now (ms)
--          ARGV[6] limits (JSON, or '' for none)   ARGV[7] zones (JSON, or '' for none)
-- returns  1 created, 2 replaced, -1 the layoutId belongs to another team
local owner = redis.call('HGET', KEYS[1], 'team')
if owner and owner ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'team', ARGV[1], 'name', ARGV[2], 'activePageId', ARGV[3], 'pages', ARGV[4], 'updatedAt', ARGV[5])
if ARGV[6] == '' then redis.call('HDEL', KEYS[1], 'limits') else redis.call('HSET', KEYS[1], 'limits', ARGV[6]) end
if ARGV[7] == '' then redis.call('HDEL', KEYS[1], 'zones') else redis.call('HSET', KEYS[1], 'zones', ARGV[7]) end
redis.call('HINCRBY', KEYS[1], 'version', 1)
if owner then return 2 end
return 1
