-- Creates or replaces a layout, refusing one that belongs to another team.
-- KEYS[1]  the layout hash   KEYS[2] the layout's cue hash (same hash slot)
-- ARGV[1]  teamId   ARGV[2] name   ARGV[3] activePageId   ARGV[4] pages (JSON)   ARGV[5] now (ms)
--          ARGV[6] limits (JSON, or '' for none)   ARGV[7] zones (JSON, or '' for none)
--          ARGV[8] each page's cued lids, JSON {pageId: "4,3"}: kept as `live:<pageId>`, and the
--          active page's as `live` (only those cues fire)
--          ARGV[9] the light canvas as declared (JSON, or '' for none)
-- returns  1 created, 2 replaced, -1 the layoutId belongs to another team
local owner = redis.call('HGET', KEYS[1], 'team')
if owner and owner ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'team', ARGV[1], 'name', ARGV[2], 'activePageId', ARGV[3], 'pages', ARGV[4], 'updatedAt', ARGV[5])
if ARGV[6] == '' then redis.call('HDEL', KEYS[1], 'limits') else redis.call('HSET', KEYS[1], 'limits', ARGV[6]) end
if ARGV[7] == '' then redis.call('HDEL', KEYS[1], 'zones') else redis.call('HSET', KEYS[1], 'zones', ARGV[7]) end
if ARGV[9] == '' then redis.call('HDEL', KEYS[1], 'light') else redis.call('HSET', KEYS[1], 'light', ARGV[9]) end
redis.call('HINCRBY', KEYS[1], 'version', 1)
local live = cjson.decode(ARGV[8])
for pageId, lids in pairs(live) do redis.call('HSET', KEYS[2], 'live:' .. pageId, lids) end
redis.call('HSET', KEYS[2], 'live', live[ARGV[3]] or '')
if owner then return 2 end
return 1
