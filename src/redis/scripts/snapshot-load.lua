-- snapshot-load: one poll kind's stored snapshot, in one round trip; the entries only travel when
-- another writer committed since the caller's cached copy.
-- KEYS[1]  entries hash (snap:<kind>): feedId -> entry
-- KEYS[2]  meta hash (snap:<kind>:meta): v version token, b baselined, u upstream entry, t variant
-- ARGV[1]  the caller's cached version token (NUL when it has none: always a full read)
-- Returns {version} when ARGV[1] is current, else {version, baselined, upstream, variant, f1, v1, f2, v2, ...}.
local v = redis.call('HGET', KEYS[2], 'v') or ''
if v == ARGV[1] then return {v} end
local b = redis.call('HGET', KEYS[2], 'b') or ''
local u = redis.call('HGET', KEYS[2], 'u') or ''
local t = redis.call('HGET', KEYS[2], 't') or ''
local all = redis.call('HGETALL', KEYS[1])
table.insert(all, 1, t)
table.insert(all, 1, u)
table.insert(all, 1, b)
table.insert(all, 1, v)
return all
