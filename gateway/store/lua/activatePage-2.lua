-- Makes a page of a layout the active one, and re-arms the layout's crowd cues (`gen:page`); `live`
-- becomes the page's cued lids, kept by the import as `live:<pageId>` (only those cues fire).
-- KEYS[1]  the layout hash   KEYS[2] the layout's cue hash (same hash slot)
-- ARGV[1]  pageId   ARGV[2] now (ms)
-- returns  1 done, 0 no such layout, -1 no such page in the layout
local pages = redis.call('HGET', KEYS[1], 'pages')
if not pages then return 0 end
for _, page in ipairs(cjson.decode(pages)) do
  if page.pageId == ARGV[1] then
    redis.call('HSET', KEYS[1], 'activePageId', ARGV[1], 'updatedAt', ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'version', 1)
    redis.call('HINCRBY', KEYS[2], 'gen:page', 1)
    redis.call('HSET', KEYS[2], 'live', redis.call('HGET', KEYS[2], 'live:' .. ARGV[1]) or '')
    return 1
  end
end
return -1
