-- KEYS: 1 due (global slot); ARGV: 1 new lease end, then per table: id, the lease end its
-- claim (or last renewal) gave it. Returns the ids renewed: those still at that lease end
-- (a commit that moved the due time, or another replica's claim, changed it).
local out = {}
for i = 2, #ARGV, 2 do
  local at = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if at and tonumber(at) == tonumber(ARGV[i + 1]) then
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
    out[#out + 1] = ARGV[i]
  end
end
return out
