-- history-samples: records one sample of a series (SLA margins, scores) per service, at each
-- resolution, and each service's latest record: in each sorted set the bucket's earlier sample
-- is replaced, samples older than the resolution's retention go, and its TTL is set.
-- KEYS[1]   the latest records' hash
-- KEYS[2..] per service, in ARGV order: its sorted set of each resolution (r sets)
-- ARGV[1]   r, the resolutions
-- ARGV[2..] per resolution: the bucket start (the sample's score), the oldest score kept as an
--           exclusive bound ('(' .. ms), the TTL ms
-- then      per service: its feedId, its latest record, then its sample member per resolution
-- Returns the number of services written.
local r = tonumber(ARGV[1])
local i = 2 + 3 * r
local k = 2
local n = 0
while i <= #ARGV do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
  for j = 0, r - 1 do
    local key = KEYS[k]
    local at = ARGV[2 + 3 * j]
    redis.call('ZREMRANGEBYSCORE', key, at, at)
    redis.call('ZADD', key, at, ARGV[i])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[3 + 3 * j])
    redis.call('PEXPIRE', key, ARGV[4 + 3 * j])
    i = i + 1
    k = k + 1
  end
  n = n + 1
end
return n
