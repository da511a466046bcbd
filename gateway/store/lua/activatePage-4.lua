-- Makes a page of a layout the active one, and re-arms the layout's crowd cues (`gen:page`); `live`
-- becomes the page's cued lids, kept by the import as `live:<pageId>` (only those cues fire). The
-- switch goes into the layout's show record with the crowd values of the page left, as the bridges
-- last sampled them.
-- KEYS[1]  the layout hash   KEYS[2] the layout's cue hash   KEYS[3] the show record   KEYS[4] its state (same hash slot)
-- ARGV[1]  pageId   ARGV[2] now (ms)   ARGV[3] who switched   ARGV[4] the record's retention (ms)   ARGV[5] its byte bound
-- returns  1 done, 0 no such layout, -1 no such page in the layout
--!include show-record.lua
local pages = redis.call('HGET', KEYS[1], 'pages')
if not pages then return 0 end
local from = redis.call('HGET', KEYS[1], 'activePageId') or ''
local found = false
local values = {}
for _, page in ipairs(cjson.decode(pages)) do
  if page.pageId == ARGV[1] then found = true end
  if page.pageId == from then
    for _, c in ipairs(page.controls) do
      if type(c.aggregate) == 'table' then
        local v = redis.call('HGET', KEYS[4], 'v:' .. c.lid)
        if v then values[#values + 1] = '{"lid":' .. string.format('%d', c.lid) .. ',' .. string.sub(v, 2) end
      end
    end
  end
end
if not found then return -1 end
redis.call('HSET', KEYS[1], 'activePageId', ARGV[1], 'updatedAt', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HINCRBY', KEYS[2], 'gen:page', 1)
redis.call('HSET', KEYS[2], 'live', redis.call('HGET', KEYS[2], 'live:' .. ARGV[1]) or '')
local entry = '{"kind":"page","from":' .. cjson.encode(from) .. ',"to":' .. cjson.encode(ARGV[1]) .. ',"by":' .. cjson.encode(ARGV[3]) .. ',"values":[' .. table.concat(values, ',') .. ']}'
show_record_append(KEYS[3], KEYS[4], entry, ARGV[4], ARGV[5], true)
return 1
