-- Matchmaking: queue a ticket unless its player has a live waiting one (then return that).
-- Every matchmaking key shares one hash tag (one slot of a Cluster); the keys of a player's
-- previous ticket and of its queue are built from the prefixes (they are in that slot too).
-- KEYS: 1 the player's key, 2 the new ticket's hash
-- ARGV: 1 ticket key prefix, 2 queue key prefix, 3 ticket id, 4 mode, 5 player id, 6 entry,
--       7 rating, 8 enqueued at, 9 alive until, 10 now, 11 the keys' TTL (ms)
-- Returns the id of the player's live waiting ticket: the new one, or the one it had.
local cur = redis.call('GET', KEYS[1])
if cur then
  local t = redis.call('HMGET', ARGV[1] .. cur, 's', 'a', 'm')
  if t[1] == 'w' then
    if tonumber(t[2]) >= tonumber(ARGV[10]) then return cur end
    redis.call('ZREM', ARGV[2] .. t[3], cur)
    redis.call('DEL', ARGV[1] .. cur)
  end
end
redis.call('HSET', KEYS[2], 'm', ARGV[4], 'p', ARGV[5], 'e', ARGV[6], 'r', ARGV[7],
           'q', ARGV[8], 'a', ARGV[9], 's', 'w')
redis.call('PEXPIRE', KEYS[2], ARGV[11])
redis.call('ZADD', ARGV[2] .. ARGV[4], ARGV[8], ARGV[3])
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[11])
return ARGV[3]
