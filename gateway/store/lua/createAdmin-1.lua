-- Creates an administrator's record whole, or not at all (a retry never finds half of one).
-- KEYS[1]  the administrator's hash
-- ARGV[1]  teamId   ARGV[2] passwordHash   ARGV[3] createdAt (ms)
-- returns  1 created, 0 an administrator with this email exists (its team is then in the reply's second element)
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('HGET', KEYS[1], 'team')} end
redis.call('HSET', KEYS[1], 'team', ARGV[1], 'passwordHash', ARGV[2], 'createdAt', ARGV[3])
return {1, ARGV[1]}
