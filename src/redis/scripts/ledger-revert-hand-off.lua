-- ledger-revert-hand-off: gives a handed-off delivery back to its batch ('j' -> owner) when its
-- retry job could not be added.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- ARGV[1]  owner (b:<batch job id>)
-- ARGV[2]  TTL seconds of the claim
-- Returns 1 when reverted, 0 when it was not 'j'.
if redis.call('GET', KEYS[1]) == 'j' then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
