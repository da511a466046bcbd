-- Mutes a participant of a layout (no text of theirs at hand): their Strings are refused for ARGV[2]
-- ms from now (Redis's clock), through their renewals, until unmuted (unmuteSub-4.lua). The layout's
-- version is bumped so every gateway re-reads its muted participants. A later time replaces an
-- earlier one; never the reverse. The mute goes into the layout's show record.
-- KEYS[1]  muted participants (hash: sub -> until, ms)   KEYS[2] the layout hash
-- KEYS[3]  the show record   KEYS[4] its state
-- ARGV[1]  sub   ARGV[2] how long (ms)   ARGV[3] who muted   ARGV[4] the record's retention (ms)   ARGV[5] its byte bound
-- returns  the time the participant is muted until (ms); 0 no such layout
--!include show-record.lua
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = math.max(now + math.floor(tonumber(ARGV[2])), tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0'))
redis.call('HSET', KEYS[1], ARGV[1], untilMs)
redis.call('PEXPIREAT', KEYS[1], math.max(untilMs, redis.call('PEXPIRETIME', KEYS[1])))
redis.call('HINCRBY', KEYS[2], 'version', 1)
show_record_append(KEYS[3], KEYS[4], cjson.encode({ kind = 'moderation', decision = 'mute', item = cjson.null, by = ARGV[3], sub = ARGV[1], lid = cjson.null, text = cjson.null }), ARGV[4], ARGV[5], true)
return untilMs
