-- KEYS: 1 table, 2 events stream (table slot); ARGV: 1 the stream id a reader delivered
-- last, 2 the id after it, 3 the most entries to return
-- Returns nil (no table) or {last seq, the entry delivered last (none: empty), up to that
-- many entries from the id after it on}, read at once.
local t = redis.call('HMGET', KEYS[1], 'v', 'q')
if not t[1] then return false end
return {t[2] or '0', redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1]),
        redis.call('XRANGE', KEYS[2], ARGV[2], '+', 'COUNT', ARGV[3])}
