-- KEYS: 1 lobby, 2 lobby entries, 3 due, 4 waiting, 5 playing, 6 finished, 7 invites,
--       8 invite of table, 9 applied versions, 10 markers, 11 bot seats of table, 12 bot
--       seats in all (global slot only)
-- ARGV: 1 number of tables, then per table: id, version ('0' = the table is gone), l, o, d,
--       s, i, x, b (as its hash records them); then the markers to remove.
-- A table's state is applied only when its version is above the one applied last.
local function set_bots(tid, n)  -- the bot seats a table counts for (waiting or playing)
  local before = tonumber(redis.call('HGET', KEYS[11], tid) or '0')
  if n ~= before then
    if n == 0 then
      redis.call('HDEL', KEYS[11], tid)
    else
      redis.call('HSET', KEYS[11], tid, n)
    end
    redis.call('INCRBY', KEYS[12], n - before)
  end
end
local function drop(tid)
  redis.call('ZREM', KEYS[1], tid)
  redis.call('HDEL', KEYS[2], tid)
  redis.call('ZREM', KEYS[3], tid)
  for k = 4, 6 do redis.call('ZREM', KEYS[k], tid) end
  local code = redis.call('HGET', KEYS[8], tid)
  if code then
    redis.call('HDEL', KEYS[7], code)
    redis.call('HDEL', KEYS[8], tid)
  end
  redis.call('HDEL', KEYS[9], tid)
  set_bots(tid, 0)
end
local names = {'waiting', 'playing', 'finished'}
local n = tonumber(ARGV[1])
local a = 2
for _ = 1, n do
  local tid, version = ARGV[a], tonumber(ARGV[a + 1])
  local lobby, score, due, status, code, x, bots =
    ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8]
  a = a + 9
  if version == 0 then
    drop(tid)
  else
    local applied, applied_due = 0, nil
    local prev = redis.call('HGET', KEYS[9], tid)
    if prev then
      local sep = string.find(prev, ':', 1, true)
      applied, applied_due = tonumber(string.sub(prev, 1, sep - 1)), string.sub(prev, sep + 1)
    end
    if version > applied then
      if lobby == '' then
        redis.call('ZREM', KEYS[1], tid)
        redis.call('HDEL', KEYS[2], tid)
      else
        redis.call('ZADD', KEYS[1], score, tid)
        redis.call('HSET', KEYS[2], tid, lobby)
      end
      if due == '0' then
        redis.call('ZREM', KEYS[3], tid)
      elseif due ~= applied_due or not redis.call('ZSCORE', KEYS[3], tid) then
        redis.call('ZADD', KEYS[3], due, tid)  -- unchanged due time: a claim's lease stays
      end
      for k = 1, 3 do
        if names[k] == status then
          redis.call('ZADD', KEYS[3 + k], x, tid)
        else
          redis.call('ZREM', KEYS[3 + k], tid)
        end
      end
      if code ~= '' then
        redis.call('HSET', KEYS[7], code, tid)
        redis.call('HSET', KEYS[8], tid, code)
      end
      redis.call('HSET', KEYS[9], tid, version .. ':' .. due)
      if status == 'waiting' or status == 'playing' then
        set_bots(tid, tonumber(bots) or 0)
      else
        set_bots(tid, 0)
      end
    end
  end
end
for m = a, #ARGV do redis.call('ZREM', KEYS[10], ARGV[m]) end
return n
