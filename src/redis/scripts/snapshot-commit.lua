-- snapshot-commit: writes a poll kind's changed entries and meta, only if nobody committed since
-- the caller's load (compare-and-set on the meta version token).
-- KEYS[1]  entries hash (snap:<kind>)
-- KEYS[2]  meta hash (snap:<kind>:meta)
-- ARGV[1]  expected version token ('' = nothing stored yet)
-- ARGV[2]  new version token
-- ARGV[3]  baselined: '1' marks the kind baselined, '' leaves it
-- ARGV[4]  upstream entry ('' = leave)
-- ARGV[5]  variant ('' = leave)
-- ARGV[6..] field/value pairs of the changed entries
-- Returns {1, new version} when written, {0, stored version} when another writer was first.
local v = redis.call('HGET', KEYS[2], 'v') or ''
if v ~= ARGV[1] then return {0, v} end
for i = 6, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
if ARGV[3] == '1' then redis.call('HSET', KEYS[2], 'b', '1') end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'u', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], 't', ARGV[5]) end
redis.call('HSET', KEYS[2], 'v', ARGV[2])
return {1, ARGV[2]}
