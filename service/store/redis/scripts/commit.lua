-- KEYS: 1 table, 2 events stream, 3 idempotency (table slot only)
-- ARGV: 1 expected version, 2 record, 3 idempotency key ('' = none), 4 response,
--       5 lobby entry ('' = unlisted), 6 lobby score ('0' when unlisted), 7 due at ('0' =
--       nothing due), 8 status ('' = unchanged), 9 finished ttl (ms), 10 active ttl (ms),
--       11 retention, 12 nonce of this call, 13 marker time (ms; '0' = no marker;
--       'inline' = the index step runs in the same script: commit_indexed.lua), 14 fence
--       (ms), 15 bot seats, 16 live channel ('' = publish nothing), 17 the events as one
--       message (published there: reader.pack_events), 18 number of events, then per
--       event: seq, number of fields, field, value, ...
-- Returns {1, version, l, o, d, s, i, x, b, changed} applied (changed: 1 when the index
-- state changed, else 0; a call sent again returns no changed); {0, version} conflict;
-- {0, version, response} duplicate; {-1, 0} no such table; {-2, version} the commit changes
-- the index state and has no marker; {-3, version} its marker is too old.
local t = redis.call('HMGET', KEYS[1], 'v', 's', 'q', 'c', 'l', 'o', 'd', 'b')
if not t[1] then return {-1, 0} end
local version = tonumber(t[1])
if t[4] == ARGV[12] then  -- this very call, sent again
  return {1, version, unpack(redis.call('HMGET', KEYS[1], 'l', 'o', 'd', 's', 'i', 'x', 'b'))}
end
local key = ARGV[3]
if key ~= '' then
  local first = redis.call('HGET', KEYS[3], key)
  if first then return {0, version, first} end
end
if version ~= tonumber(ARGV[1]) then return {0, version} end
local status = ARGV[8]
if status == '' then status = t[2] end
local now = now_ms()
local changed = ARGV[5] ~= t[5] or ARGV[6] ~= t[6] or ARGV[7] ~= t[7] or status ~= t[2]
    or ARGV[15] ~= t[8]
if changed and ARGV[13] ~= 'inline' then
  -- the index changes: only under a fresh write-ahead marker (see docs/redis-store.md)
  if ARGV[13] == '0' then return {-2, version} end
  if now - tonumber(ARGV[13]) > tonumber(ARGV[14]) then return {-3, version} end
end
-- check the events before writing anything: a script that fails half-way is not undone
local last = tonumber(t[3])
local n = tonumber(ARGV[18])
local i = 19
for e = 1, n do
  local seq = tonumber(ARGV[i])
  if seq <= last then
    return redis.error_reply('tute: event ' .. ARGV[i] .. ' is not after ' .. last)
  end
  last = seq
  i = i + 2 + 2 * tonumber(ARGV[i + 1])
end
i = 19
for e = 1, n do
  local nf = tonumber(ARGV[i + 1])
  local cmd = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[11], ARGV[i] .. '-0'}
  for f = 1, 2 * nf do cmd[6 + f] = ARGV[i + 1 + f] end
  redis.call(unpack(cmd))
  i = i + 2 + 2 * nf
end
local ttl = tonumber(ARGV[10])
if status == 'finished' then ttl = tonumber(ARGV[9]) end
local x = now + ttl
version = version + 1
redis.call('HSET', KEYS[1], 'v', version, 'r', ARGV[2], 's', status, 'q', last, 'c', ARGV[12],
           'l', ARGV[5], 'o', ARGV[6], 'd', ARGV[7], 'x', x, 'b', ARGV[15])
if key ~= '' then redis.call('HSET', KEYS[3], key, ARGV[4]) end
if ARGV[16] ~= '' and n > 0 then redis.call('PUBLISH', ARGV[16], ARGV[17]) end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
local invite = redis.call('HGET', KEYS[1], 'i') or ''
return {1, version, ARGV[5], ARGV[6], ARGV[7], status, invite, tostring(x), ARGV[15],
        changed and 1 or 0}
