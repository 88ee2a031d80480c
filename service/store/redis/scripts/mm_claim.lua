-- Matchmaking: claim a group of tickets for one table, all or none. Every ticket must be
-- waiting and alive at `now`: a cancelled, expired or already matched ticket fails the whole
-- claim and nothing changes. Claimed tickets are marked matched with the table's plan, leave
-- their queue and are kept for their watchers until `kept until` (their alive-until, in the
-- callers' clock; their keys expire in Redis after `keep`): meanwhile each stays its
-- player's ticket (the player's key points at it, so mm_enqueue returns it).
-- KEYS: the tickets' hashes
-- ARGV: 1 ticket key prefix, 2 queue key prefix, 3 player key prefix, 4 now, 5 keep (ms),
--       6 plan, 7 kept until
-- Returns 1 when claimed, 0 when not.
local now = tonumber(ARGV[4])
for i = 1, #KEYS do
  local t = redis.call('HMGET', KEYS[i], 's', 'a')
  if t[1] ~= 'w' or tonumber(t[2]) < now then return 0 end
  for j = 1, i - 1 do
    if KEYS[j] == KEYS[i] then return 0 end
  end
end
for i = 1, #KEYS do
  local f = redis.call('HMGET', KEYS[i], 'm', 'p')
  local id = string.sub(KEYS[i], #ARGV[1] + 1)
  redis.call('ZREM', ARGV[2] .. f[1], id)
  local held = redis.call('GET', ARGV[3] .. f[2])
  if not held or held == id then
    redis.call('SET', ARGV[3] .. f[2], id, 'PX', ARGV[5])
  end
  redis.call('HSET', KEYS[i], 's', 'm', 'x', ARGV[6], 'a', ARGV[7])
  redis.call('PEXPIRE', KEYS[i], ARGV[5])
end
return 1
