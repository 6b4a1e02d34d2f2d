-- history-status: records the status of each service whose status differs from the last one
-- recorded for it: the member added to its sorted set at `now`, members older than the retention
-- and beyond the most kept removed, its TTL set, and the last statuses' hash updated.
-- KEYS[1]   the last statuses' hash (feedId -> status)
-- KEYS[2..] per service, in ARGV order: its status sorted set
-- ARGV[1]   now (the member's score)
-- ARGV[2]   the oldest score kept, as an exclusive bound ('(' .. ms)
-- ARGV[3]   the most members kept
-- ARGV[4]   the TTL ms
-- then      per service: its feedId, its status, its member
-- Returns the number of services whose status was recorded.
local keep = tonumber(ARGV[3])
local i = 5
local k = 2
local n = 0
while i <= #ARGV do
  local feed, status = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[1], feed) ~= status then
    local key = KEYS[k]
    redis.call('ZADD', key, ARGV[1], ARGV[i + 2])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[2])
    redis.call('ZREMRANGEBYRANK', key, 0, -(keep + 1))
    redis.call('PEXPIRE', key, ARGV[4])
    redis.call('HSET', KEYS[1], feed, status)
    n = n + 1
  end
  i = i + 3
  k = k + 1
end
return n
