-- Matchmaking: keep a live waiting ticket alive (its watcher's stream is open).
-- KEYS: 1 the ticket's hash
-- ARGV: 1 alive until, 2 now, 3 the keys' TTL (ms), 4 the player key prefix
-- Returns 1 when kept, 0 when the ticket is not live and waiting.
local t = redis.call('HMGET', KEYS[1], 's', 'a', 'p')
if t[1] ~= 'w' or tonumber(t[2]) < tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'a', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', ARGV[4] .. t[3], ARGV[3])
return 1
