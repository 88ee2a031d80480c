-- KEYS: 1 due, 2 this claim's record (global slot)
-- ARGV: 1 now, 2 lease end (now + lease), 3 limit, 4 lease (ms)
-- Returns {id, due at, ...}. The client sends a call again when its connection broke or its
-- reply timed out, though Redis may have run it: this very claim sent again returns what it
-- took then (recorded for the lease) instead of taking more and leaving those leased to
-- nobody. A claim that took nothing records nothing: sent again, it may take items.
local taken = redis.call('LRANGE', KEYS[2], 0, -1)
if #taken > 0 then return taken end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       ARGV[3])
for i = 1, #due, 2 do redis.call('ZADD', KEYS[1], ARGV[2], due[i]) end
if #due > 0 then
  for i = 1, #due, 1000 do
    redis.call('RPUSH', KEYS[2], unpack(due, i, math.min(i + 999, #due)))
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return due
