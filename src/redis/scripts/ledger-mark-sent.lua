-- ledger-mark-sent: marks deliveries sent ('s').
-- KEYS     the delivery ledger keys (delivery:<id>), any number
-- ARGV[1]  TTL seconds
-- Returns the number of keys marked.
for _, key in ipairs(KEYS) do
  redis.call('SET', key, 's', 'EX', ARGV[1])
end
return #KEYS
