-- ledger-hand-off: hands a delivery to its retry job ('j') while the owner holds it or nobody does.
-- With the owner 'j' (the retry job itself), it keeps or takes back the hand-off of a retry job or
-- a dead letter being retried: never beside a sender or a batch.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- KEYS[2..]  optional: the indexes of its lifecycles' deliveries on its route handed to jobs of
--          their own (delivery-open:<subscription>|<channel>|<lifecycle>), which the later
--          deliveries of those lifecycles on that route wait for
-- ARGV[1]  owner (b:<batch job id>, or 'j')
-- ARGV[2]  TTL seconds of the hand-off
-- ARGV[3]  with indexes: the indexes' TTL ms; ARGV[4]: the delivery id (the member);
--          ARGV[4 + i]: its rank in KEYS[1 + i] (the member's score)
-- Returns 1 when handed off, 0 when it is someone else's (sent, or another batch's).
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[2])
  for i = 2, #KEYS do
    local rank = ARGV[3 + i]
    redis.call('ZADD', KEYS[i], rank, ARGV[4])
    -- Listings past the horizon (ranks are Unix ms doubled) hold nobody back: they go.
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. string.format('%.0f', tonumber(rank) - 2 * tonumber(ARGV[3])))
    redis.call('PEXPIRE', KEYS[i], ARGV[3])
  end
  return 1
end
return 0
