-- ledger-reclaim: keeps (or takes back) a delivery for its retry job ('j') while it is 'j' or
-- unset: a dead letter retried, never beside a sender.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- ARGV[1]  TTL seconds of the hand-off
-- Returns 1 when it is the retry job's, 0 when it was sent or a batch holds it.
local v = redis.call('GET', KEYS[1])
if v == false or v == 'j' then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[1])
  return 1
end
return 0
