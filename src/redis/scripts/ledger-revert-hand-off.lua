-- ledger-revert-hand-off: gives a handed-off delivery back to its batch (retry job's value ->
-- owner) when its retry job could not be added.
-- The ledger's values are defined in src/delivery/rules.ts (LEDGER_VALUES) and come in as ARGV.
-- KEYS[1]  the delivery ledger key (delivery:<id>)
-- ARGV[1]  owner (the batch owner prefix followed by the batch job id)
-- ARGV[2]  TTL seconds of the claim
-- ARGV[3]  the value of a delivery handed to its retry job
-- Returns 1 when reverted, 0 when it was not ARGV[3].
if redis.call('GET', KEYS[1]) == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
