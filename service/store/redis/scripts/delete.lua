-- KEYS: 1 table, 2 events stream, 3 idempotency, 4 presence (table slot only)
-- ARGV: 1 expected version, 2 marker time (ms; 'inline' = the index step runs in the same
--       script: delete_indexed.lua), 3 fence (ms)
-- Returns 1 deleted, 0 no such table, -1 the version moved on, -3 the marker is too old.
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return 0 end
if tonumber(v) ~= tonumber(ARGV[1]) then return -1 end
if ARGV[2] ~= 'inline' and now_ms() - tonumber(ARGV[2]) > tonumber(ARGV[3]) then return -3 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1
