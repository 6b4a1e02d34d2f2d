-- routing-decided-at: the time of a step on the routing clock: a cycle job's routing, or the noise
-- tick's batches and catch-ups. It is the caller's clock, but never at or before the last time
-- given, unless that is more than ARGV[2] (CLOCK_SKEW_MS, src/delivery/rules.ts: a minute) ahead
-- (a replica whose clock is that far off must not hold every later time); the clock moves up to
-- it. Cycles are routed one at a time, so the times (a delivery's `createdAt`, its rank in its lifecycle's order) follow routing order across
-- replicas whose clocks differ a little. A cycle job's first time is kept, so a re-run decides as
-- its first run did.
-- KEYS[1]  routing:last-decided-at
-- KEYS[2]  optional: routing:decided-at:<job id>, the job's kept time
-- ARGV[1]  Unix ms now (the caller's clock)
-- ARGV[2]  the clock skew allowed between replicas, ms (CLOCK_SKEW_MS)
-- ARGV[3]  with KEYS[2]: how long the job's time is kept, ms
-- Returns the step's time, Unix ms, as a string.
if KEYS[2] then
  local kept = redis.call('GET', KEYS[2])
  if kept then return kept end
end
local now = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if now <= last and last - now <= tonumber(ARGV[2]) then now = last + 1 end
local t = string.format('%.0f', now)
if KEYS[2] then redis.call('SET', KEYS[2], t, 'PX', ARGV[3]) end
if now > last then redis.call('SET', KEYS[1], t) end
return t
