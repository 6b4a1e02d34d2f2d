-- ledger-reclaim: keeps (or takes back) a delivery for its retry job ('j') while it is 'j' or
-- unset: a dead letter retried, never beside a sender. With indexes, it is listed there again
-- (as ledger-hand-off lists a hand-off), so the later deliveries of its lifecycles wait for it.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- KEYS[2..]  optional: the indexes of its lifecycles' deliveries on its route
--          (delivery-open:<subscription>|<channel>|<lifecycle>)
-- ARGV[1]  TTL seconds of the hand-off
-- ARGV[2]  with indexes: the indexes' TTL ms; ARGV[3]: the delivery id (the member);
--          ARGV[2 + i]: its rank in KEYS[i] (the member's score), for i >= 2
-- Returns 1 when it is the retry job's, 0 when it was sent or a batch holds it.
local v = redis.call('GET', KEYS[1])
if v == false or v == 'j' then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[1])
  for i = 2, #KEYS do
    local rank = ARGV[2 + i]
    redis.call('ZADD', KEYS[i], rank, ARGV[3])
    -- Listings past the horizon (ranks are Unix ms doubled) hold nobody back: they go.
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. string.format('%.0f', tonumber(rank) - 2 * tonumber(ARGV[2])))
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
  return 1
end
return 0
