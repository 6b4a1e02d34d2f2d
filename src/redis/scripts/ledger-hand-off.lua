-- ledger-hand-off: hands a delivery to its retry job (ARGV[3]) while the owner holds it or nobody
-- does. With the owner ARGV[3] (the retry job itself), it keeps or takes back the hand-off of a
-- retry job or a dead letter being retried: never beside a sender or a batch.
-- The ledger's values and the ranks are defined in src/delivery/rules.ts and come in as ARGV.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- KEYS[2..]  optional: the indexes of its lifecycles' deliveries on its route handed to jobs of
--          their own (delivery-open:<subscription>|<channel>|<lifecycle>), which the later
--          deliveries of those lifecycles on that route wait for
-- ARGV[1]  owner (the batch owner prefix followed by the batch job id, or ARGV[3])
-- ARGV[2]  TTL seconds of the hand-off
-- ARGV[3]  the value of a delivery handed to its retry job
-- ARGV[4]  with indexes: the indexes' TTL ms (the order horizon); ARGV[5]: that horizon in ranks
--          (rankSpan); ARGV[6]: the delivery id (the member); ARGV[6 + i]: its rank in
--          KEYS[1 + i] (the member's score)
-- Returns 1 when handed off, 0 when it is someone else's (sent, or another batch's).
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[2])
  for i = 2, #KEYS do
    local rank = ARGV[5 + i]
    redis.call('ZADD', KEYS[i], rank, ARGV[6])
    -- Listings past the horizon hold nobody back: they go.
    local oldest = string.format('%.0f', tonumber(rank) - tonumber(ARGV[5]))
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. oldest)
    redis.call('PEXPIRE', KEYS[i], ARGV[4])
  end
  return 1
end
return 0
