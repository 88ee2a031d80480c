-- KEYS: 1 table (table slot only)
-- ARGV: 1 record, 2 invite code, 3 lobby entry ('' = unlisted), 4 lobby score, 5 ttl (ms),
--       6 marker time (ms; 'inline' = the index step runs in the same script:
--       create_indexed.lua), 7 fence (ms), 8 due at ('0' = nothing due)
-- Returns {1, version, l, o, d, s, i, x, b} created (or this very call, sent again); {0} the
-- id is taken; {-3} the marker is too old.
local r = redis.call('HMGET', KEYS[1], 'v', 'r')
if r[1] then
  if r[1] == '1' and r[2] == ARGV[1] then  -- this very call, sent again
    return {1, 1, unpack(redis.call('HMGET', KEYS[1], 'l', 'o', 'd', 's', 'i', 'x', 'b'))}
  end
  return {0}
end
local now = now_ms()
if ARGV[6] ~= 'inline' and now - tonumber(ARGV[6]) > tonumber(ARGV[7]) then return {-3} end
local x = now + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'v', 1, 'r', ARGV[1], 's', 'waiting', 'q', 0, 'l', ARGV[3],
           'o', ARGV[4], 'd', ARGV[8], 'i', ARGV[2], 'x', x, 'b', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, 1, ARGV[3], ARGV[4], ARGV[8], 'waiting', ARGV[2], tostring(x), '0'}
