-- pace: per-destination pacing: reserves the next send slot of one destination, or holds it back.
-- KEYS[1]  the destination's pace hash: f = Redis time (ms) of its next free slot,
--          h = Redis time (ms) until which it is held back (a receiver's Retry-After)
-- ARGV[1]  interval in ms between two sends to this destination
-- ARGV[2]  hold in ms from now (> 0: only record the hold, reply 0)
-- ARGV[3]  '1' when the caller already holds a slot that is due now: it may send unless the
--          destination is held back, in which case it gets a new slot after the hold
-- Reply: ms from now until the caller's slot (0 = send now).
-- Times come from Redis (TIME), so replicas with skewed clocks share one timeline.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local hold = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'f', 'h')
local free = tonumber(v[1] or '0')
local held = tonumber(v[2] or '0')
if hold > 0 then
  if now + hold > held then held = now + hold end
  redis.call('HSET', KEYS[1], 'h', held)
  redis.call('PEXPIRE', KEYS[1], math.max(free, held) - now + 60000)
  return 0
end
if ARGV[3] == '1' and held <= now then return 0 end
local slot = math.max(now, free, held)
free = slot + interval
redis.call('HSET', KEYS[1], 'f', free)
redis.call('PEXPIRE', KEYS[1], math.max(free, held) - now + 60000)
return slot - now
