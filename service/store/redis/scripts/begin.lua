-- KEYS: 1 markers; ARGV: 1 marker. A write-ahead marker, scored with Redis's time (ms).
local ms = now_ms()
redis.call('ZADD', KEYS[1], ms, ARGV[1])
return ms
