-- ledger-hand-off: hands a delivery to its retry job ('j') while the owner holds it or nobody does.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- ARGV[1]  owner (b:<batch job id>)
-- ARGV[2]  TTL seconds of the hand-off
-- Returns 1 when handed off, 0 when it is someone else's (sent, or another batch's).
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], 'j', 'EX', ARGV[2])
  return 1
end
return 0
