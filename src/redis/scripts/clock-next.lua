-- clock-next: the time of a step ordered after every earlier one on a shared clock (the routing
-- clock: cycles routed, and the noise tick's batches and catch-ups), as routing-decided-at.lua
-- gives a cycle's first run: the caller's time, but never at or before the last time given,
-- unless that is more than a minute ahead (a replica whose clock is that far off must not hold
-- every later time); the clock moves up to it.
-- KEYS[1]  the clock (routing:last-decided-at)
-- ARGV[1]  Unix ms now (the caller's clock)
-- Returns the step's time, Unix ms, as a string.
local now = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if now <= last and last - now <= 60000 then now = last + 1 end
local t = string.format('%.0f', now)
if now > last then redis.call('SET', KEYS[1], t) end
return t
