-- Unmutes a participant of a layout: their Strings are taken again. The layout's version is bumped
-- so every gateway re-reads its muted participants; the unmute goes into the layout's show record.
-- KEYS[1]  muted participants (hash: sub -> until, ms)   KEYS[2] the layout hash
-- KEYS[3]  the show record   KEYS[4] its state
-- ARGV[1]  sub   ARGV[2] who unmuted   ARGV[3] the record's retention (ms)   ARGV[4] its byte bound
-- returns  1 the participant was muted; 2 it was not (nothing changed); 0 no such layout
--!include show-record.lua
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 2 end
redis.call('HINCRBY', KEYS[2], 'version', 1)
show_record_append(KEYS[3], KEYS[4], cjson.encode({ kind = 'moderation', decision = 'unmute', item = cjson.null, by = ARGV[2], sub = ARGV[1], lid = cjson.null, text = cjson.null }), ARGV[3], ARGV[4], true)
return 1
