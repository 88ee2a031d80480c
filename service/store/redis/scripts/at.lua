-- KEYS: 1 table, 2 events stream (table slot); ARGV: 1 stream id
-- Returns nil (no table) or {version, last seq, the entry with that id (none: empty)}.
local t = redis.call('HMGET', KEYS[1], 'v', 'q')
if not t[1] then return false end
return {t[1], t[2] or '0', redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])}
