-- auth-attempt: the failed-attempt limit of one client address, atomic under parallel requests.
-- A token is checked only in a slot taken here first, and a slot is given back as a failure or
-- freed, so failures plus checks in flight never pass the limit: however many requests arrive at
-- once, at most `limit` wrong tokens are checked per address and window.
-- KEYS[1]  the address's hash: f = failed attempts in the window, p = checks in flight
-- ARGV[1]  'take': take a slot before checking a token;
--          'fail': give back a slot whose token was wrong (it counts as a failure);
--          'free': give back a slot whose token was right, or whose check did not finish
-- ARGV[2]  the limit (failed attempts per window)
-- ARGV[3]  the window in ms, from the first attempt of a run that had a failure
-- Reply to 'take': {1, 0} a slot is taken: check the token; {0, ms} refused: the address failed
--   `limit` times, ms until the window ends; {2, ms} busy: failures and checks in flight fill
--   the limit (a slot may come free), ms until the window ends.
-- Reply to 'fail' and 'free': 0. A hash with no failure and nothing in flight is deleted.
local key = KEYS[1]
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local v = redis.call('HMGET', key, 'f', 'p')
local f = tonumber(v[1] or '0')
local p = tonumber(v[2] or '0')
if ARGV[1] == 'take' then
  if f + p >= limit then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      redis.call('PEXPIRE', key, window)
      ttl = window
    end
    if f >= limit then return {0, ttl} end
    return {2, ttl}
  end
  redis.call('HSET', key, 'p', p + 1)
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, window) end
  return {1, 0}
end
if p > 0 then p = p - 1 end
if ARGV[1] == 'fail' then f = f + 1 end
if f == 0 and p == 0 then
  redis.call('DEL', key)
  return 0
end
redis.call('HSET', key, 'f', f, 'p', p)
if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, window) end
return 0
