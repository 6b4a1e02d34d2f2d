-- hash-field-cas: replaces a hash field only if it still holds the value the caller read
-- (compare-and-set; a missing field never matches).
-- KEYS[1]  the hash
-- ARGV[1]  field
-- ARGV[2]  the value read
-- ARGV[3]  the new value
-- Returns 1 when replaced, 0 when the field changed (or went) meanwhile.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
