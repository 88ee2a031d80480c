-- KEYS: 1 bucket (hash: t tokens, l last refill time; its own slot)
-- ARGV: 1 rate (tokens per second, > 0), 2 burst, 3 cost, 4 now (the caller's clock, s),
--       5 longest ttl (ms)
-- Returns {1 taken or 0 not, seconds until it would be (a string)}: Store.take_tokens, the
-- same steps as base.refill_and_take.
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 't', 'l')
local tokens, last = burst, now
if b[1] then
  tokens, last = tonumber(b[1]), tonumber(b[2])
  if now > last then
    tokens = math.min(burst, tokens + (now - last) * rate)
    last = now
  end
end
local taken, wait = 0, 0
if cost <= tokens then
  tokens = math.min(burst, tokens - cost)
  taken = 1
else
  wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'l', string.format('%.17g', last))
-- a bucket left alone until it is full again is as good as none
local ttl = math.min(math.floor((burst - tokens) / rate * 1000) + 1000, tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))
return {taken, string.format('%.17g', wait)}
