-- Matchmaking: cancel a waiting ticket (a matched one stays matched).
-- KEYS: 1 the ticket's hash
-- ARGV: 1 queue key prefix, 2 player key prefix, 3 ticket id
-- Returns 1 when cancelled, 0 when the ticket is not waiting.
local t = redis.call('HMGET', KEYS[1], 's', 'm', 'p')
if t[1] ~= 'w' then return 0 end
redis.call('ZREM', ARGV[1] .. t[2], ARGV[3])
if redis.call('GET', ARGV[2] .. t[3]) == ARGV[3] then redis.call('DEL', ARGV[2] .. t[3]) end
redis.call('DEL', KEYS[1])
return 1
