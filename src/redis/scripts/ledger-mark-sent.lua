-- ledger-mark-sent: marks deliveries sent.
-- The ledger's values are defined in src/delivery/rules.ts (LEDGER_VALUES) and come in as ARGV.
-- KEYS     the delivery ledger keys (delivery:<id>), any number
-- ARGV[1]  TTL seconds
-- ARGV[2]  the value of a sent delivery
-- Returns the number of keys marked.
for _, key in ipairs(KEYS) do
  redis.call('SET', key, ARGV[2], 'EX', ARGV[1])
end
return #KEYS
