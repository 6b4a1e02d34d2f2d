-- clock-at-least: raises a stored Unix ms clock to the given time (never lowers it).
-- KEYS[1]  the clock (routing:last-decided-at)
-- ARGV[1]  Unix ms
-- Returns 1 when raised, 0 when it was at or after ARGV[1] already.
local at = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if at > last then
  redis.call('SET', KEYS[1], string.format('%.0f', at))
  return 1
end
return 0
