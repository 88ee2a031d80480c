-- Matchmaking: the live waiting tickets of one mode, oldest first; dead ones (past their
-- alive-until, or gone) leave the queue, their hashes and their players' keys.
-- KEYS: 1 the mode's queue
-- ARGV: 1 ticket key prefix, 2 player key prefix, 3 now
-- Returns {id, player, rating, enqueued at, alive until, entry, ...}.
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local out = {}
local now = tonumber(ARGV[3])
for _, id in ipairs(ids) do
  local t = redis.call('HMGET', ARGV[1] .. id, 's', 'a', 'p', 'r', 'q', 'e')
  if t[1] == 'w' and tonumber(t[2]) >= now then
    table.insert(out, id)
    table.insert(out, t[3])
    table.insert(out, t[4])
    table.insert(out, t[5])
    table.insert(out, t[2])
    table.insert(out, t[6])
  elseif t[1] ~= 'm' then
    redis.call('ZREM', KEYS[1], id)
    if t[1] then
      redis.call('DEL', ARGV[1] .. id)
      if redis.call('GET', ARGV[2] .. t[3]) == id then redis.call('DEL', ARGV[2] .. t[3]) end
    end
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
