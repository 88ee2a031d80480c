-- The time of Redis (ms since the epoch); prepended to every script that calls now_ms().
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
