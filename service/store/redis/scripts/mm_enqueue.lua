-- Matchmaking: queue a ticket unless its player has a live ticket, waiting (alive) or matched
-- (still kept): then return that one. The player's matched ticket whose id is ARGV[12] (its
-- match is over, the caller found) is replaced instead: the new ticket is queued and becomes
-- the player's, the matched one stays readable by its id until its keep ends. One script,
-- so of concurrent calls for one player at most one queues its ticket.
-- Every matchmaking key shares one hash tag (one slot of a Cluster); the keys of a player's
-- previous ticket and of its queue are built from the prefixes (they are in that slot too).
-- KEYS: 1 the player's key, 2 the new ticket's hash
-- ARGV: 1 ticket key prefix, 2 queue key prefix, 3 ticket id, 4 mode, 5 player id, 6 entry,
--       7 rating, 8 enqueued at, 9 alive until, 10 now, 11 the keys' TTL (ms), 12 the id of
--       the matched ticket to replace ('' for none)
-- Returns {id} when the new ticket is queued, else the player's live ticket as
-- {id, mode, rating, enqueued at, alive until, entry, state, plan}.
local cur = redis.call('GET', KEYS[1])
if cur then
  local t = redis.call('HMGET', ARGV[1] .. cur, 's', 'a', 'm', 'r', 'q', 'e', 'x')
  local live = t[1] and tonumber(t[2]) >= tonumber(ARGV[10])
  if live and (t[1] == 'w' or cur ~= ARGV[12]) then
    return {cur, t[3], t[4], t[5], t[2], t[6] or '', t[1], t[7] or ''}
  end
  if t[1] == 'w' then
    redis.call('ZREM', ARGV[2] .. t[3], cur)
    redis.call('DEL', ARGV[1] .. cur)
  end
end
redis.call('HSET', KEYS[2], 'm', ARGV[4], 'p', ARGV[5], 'e', ARGV[6], 'r', ARGV[7],
           'q', ARGV[8], 'a', ARGV[9], 's', 'w')
redis.call('PEXPIRE', KEYS[2], ARGV[11])
redis.call('ZADD', ARGV[2] .. ARGV[4], ARGV[8], ARGV[3])
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[11])
return {ARGV[3]}
