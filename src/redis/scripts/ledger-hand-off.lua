-- ledger-hand-off: hands a delivery to its retry job ('j') while the owner holds it or nobody does.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- KEYS[2]  optional: the index of its lifecycle's deliveries on its route handed to jobs of
--          their own (delivery-open:<subscription>|<channel>|<lifecycle>), which the later
--          deliveries of that lifecycle on that route wait for
-- ARGV[1]  owner (b:<batch job id>)
-- ARGV[2]  TTL seconds of the hand-off
-- ARGV[3]  with KEYS[2]: the delivery's rank (the member's score); ARGV[4]: the index's TTL ms;
--          ARGV[5]: the delivery id (the member)
-- Returns 1 when handed off, 0 when it is someone else's (sent, or another batch's).
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[2])
  if KEYS[2] then
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
    -- Listings past the horizon (ranks are Unix ms doubled) hold nobody back: they go.
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.0f', tonumber(ARGV[3]) - 2 * tonumber(ARGV[4])))
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  return 1
end
return 0
