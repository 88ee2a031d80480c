-- KEYS: the status sets; returns how many tables of each have not expired
local ms = now_ms()
local out = {}
for k = 1, #KEYS do out[k] = redis.call('ZCOUNT', KEYS[k], '(' .. ms, '+inf') end
return out
