-- ledger-claim: claims every unclaimed delivery for a batch owner.
-- The ledger's values are defined in src/delivery/rules.ts (LEDGER_VALUES) and come in as ARGV.
-- KEYS     the delivery ledger keys (delivery:<id>), any number
-- ARGV[1]  owner (the batch owner prefix followed by the batch job id)
-- ARGV[2]  TTL seconds of a new claim
-- ARGV[3]  the value of a delivery handed to its retry job
-- Returns one code per key: 1 claimed now, 2 already ARGV[1]'s, 3 handed to a retry job
-- (ARGV[3]), 0 anything else (sent, or another batch's).
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, ARGV[1], 'NX', 'EX', ARGV[2]) then
    out[i] = 1
  else
    local v = redis.call('GET', key)
    if v == ARGV[1] then out[i] = 2 elseif v == ARGV[3] then out[i] = 3 else out[i] = 0 end
  end
end
return out
