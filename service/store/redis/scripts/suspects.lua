-- KEYS: 1 markers, 2 waiting, 3 playing, 4 finished, 5 born, 6 rebuild lease (global slot)
-- ARGV: 1 repair after (ms), 2 limit, 3 scrub offset, 4 scrub count, 5 rebuild lease (ms),
--       6 nonce of this call (the lease's value: this very call sent again rebuilds too)
-- Returns {rebuild?, old markers, tables past their expiry, a slice of all tables from the
-- offset (modulo their number), the offset of the next slice}; repair then reads those
-- tables (see docs/redis-store.md).
local ms = now_ms()
local limit = tonumber(ARGV[2])
local rebuild = 0
if redis.call('EXISTS', KEYS[5]) == 0 then
  redis.call('SET', KEYS[6], ARGV[6], 'NX', 'PX', ARGV[5])
  if redis.call('GET', KEYS[6]) == ARGV[6] then rebuild = 1 end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[1]), 'LIMIT', 0,
                       limit)
local lapsed = {}
for k = 2, 4 do
  for _, tid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', ms, 'LIMIT', 0, limit)) do
    lapsed[#lapsed + 1] = tid
  end
end
local sizes, all = {}, 0
for k = 2, 4 do
  sizes[k] = redis.call('ZCARD', KEYS[k])
  all = all + sizes[k]
end
local slice = {}
local function take(offset, want)  -- positions offset .. offset + want - 1 of all the sets
  local total = 0
  for k = 2, 4 do
    local n = sizes[k]
    if want > 0 and offset < total + n then
      local from = math.max(offset - total, 0)
      for _, tid in ipairs(redis.call('ZRANGE', KEYS[k], from, from + want - 1)) do
        slice[#slice + 1] = tid
        want = want - 1
      end
    end
    total = total + n
  end
end
local following = 0
if all > 0 then
  local offset, want = tonumber(ARGV[3]) % all, math.min(tonumber(ARGV[4]), all)
  take(offset, want)
  if #slice < want then take(0, want - #slice) end  -- round the end
  following = (offset + #slice) % all
end
return {rebuild, old, lapsed, slice, following}
