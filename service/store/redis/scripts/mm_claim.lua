-- Matchmaking: claim a group of tickets for one table, all or none. Every ticket must be
-- waiting and alive at `now`: a cancelled, expired or already matched ticket fails the whole
-- claim and nothing changes. Claimed tickets are marked matched with the table's plan, leave
-- their queue, free their players' keys and are kept for their watchers.
-- KEYS: the tickets' hashes
-- ARGV: 1 ticket key prefix, 2 queue key prefix, 3 player key prefix, 4 now, 5 keep (ms),
--       6 plan
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
  if redis.call('GET', ARGV[3] .. f[2]) == id then redis.call('DEL', ARGV[3] .. f[2]) end
  redis.call('HSET', KEYS[i], 's', 'm', 'x', ARGV[6])
  redis.call('PEXPIRE', KEYS[i], ARGV[5])
end
return 1
