-- routing-decided-at: the clock a cycle job is routed on. The first run's time is kept, so a
-- re-run decides as it did; a first run takes the caller's clock, but never at or before the time
-- the previous cycle was given, unless that is more than a minute ahead (a replica whose clock
-- is that far off must not hold every later cycle's clock): cycles are routed one at a time, so
-- the times (a delivery's `createdAt`, its rank in its lifecycle's order) follow routing order
-- across replicas whose clocks differ a little.
-- KEYS[1]  routing:decided-at:<job id>
-- KEYS[2]  routing:last-decided-at
-- ARGV[1]  Unix ms now (the caller's clock)
-- ARGV[2]  how long the job's time is kept, ms
-- Returns the job's time, Unix ms, as a string.
local kept = redis.call('GET', KEYS[1])
if kept then return kept end
local now = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if now <= last and last - now <= 60000 then now = last + 1 end
local t = string.format('%.0f', now)
redis.call('SET', KEYS[1], t, 'PX', ARGV[2])
if now > last then redis.call('SET', KEYS[2], t) end
return t
