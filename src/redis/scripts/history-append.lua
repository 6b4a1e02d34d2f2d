-- history-append: adds members to bounded sorted sets (a service history's event lists), and
-- bounds each: members older than a score go, then the oldest beyond a count, and its TTL is set.
-- KEYS     the sorted sets, any number
-- ARGV[1]  the oldest score kept (lower scores are removed)
-- ARGV[2]  the most members kept per set (the lowest-scored go first)
-- ARGV[3]  the TTL of each set, ms
-- ARGV[4..] per key, in KEYS order: its member count n, then n score/member pairs
-- Returns the number of sets written.
local oldest = '(' .. ARGV[1]
local keep = tonumber(ARGV[2])
local ttl = ARGV[3]
local i = 4
for _, key in ipairs(KEYS) do
  local n = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, n do
    redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
    i = i + 2
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', oldest)
  redis.call('ZREMRANGEBYRANK', key, 0, -(keep + 1))
  redis.call('PEXPIRE', key, ttl)
end
return #KEYS
