-- noise-buffer-append: appends a transition to a route's group or quiet-hours buffer once per
-- transition id (a retried routing job adds nothing), and sets the route's marker.
-- KEYS[1]  the buffer list (noise:group:<route> or noise:held:<route>)
-- KEYS[2]  the route's seen set (noise:seen:<route>): transition ids already buffered
-- KEYS[3]  the marker hash (noise:group-since or noise:held-until)
-- ARGV[1]  transition id
-- ARGV[2]  the stored transition
-- ARGV[3]  route (the marker field)
-- ARGV[4]  marker value (Unix ms)
-- ARGV[5]  '1' = set the marker only if unset (HSETNX), else overwrite it
-- Returns 1 when appended, 0 when the id was buffered already.
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('EXPIRE', KEYS[2], 172800)
redis.call('RPUSH', KEYS[1], ARGV[2])
if ARGV[5] == '1' then redis.call('HSETNX', KEYS[3], ARGV[3], ARGV[4])
else redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
return 1
