-- Makes a page of a layout the active one, and re-arms the layout's crowd cues (`gen:page`); `live`
-- becomes the lids of the page's controls that declare a cue (only those fire).
-- KEYS[1]  the layout hash   KEYS[2] the layout's cue hash (same hash slot)
-- ARGV[1]  pageId   ARGV[2] now (ms)
-- returns  1 done, 0 no such layout, -1 no such page in the layout
-- The lids of a page's controls that declare a crowd cue, as "4,3" ('' for none).
local function cuedLids(pages, pageId)
  local lids = {}
  for _, page in ipairs(pages) do
    if page.pageId == pageId then
      for _, c in ipairs(page.controls) do
        if type(c.aggregate) == 'table' and type(c.aggregate.cue) == 'table' then lids[#lids + 1] = string.format('%d', c.lid) end
      end
    end
  end
  return table.concat(lids, ',')
end
local pages = redis.call('HGET', KEYS[1], 'pages')
if not pages then return 0 end
local decoded = cjson.decode(pages)
for _, page in ipairs(decoded) do
  if page.pageId == ARGV[1] then
    redis.call('HSET', KEYS[1], 'activePageId', ARGV[1], 'updatedAt', ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'version', 1)
    redis.call('HINCRBY', KEYS[2], 'gen:page', 1)
    redis.call('HSET', KEYS[2], 'live', cuedLids(decoded, ARGV[1]))
    return 1
  end
end
return -1
