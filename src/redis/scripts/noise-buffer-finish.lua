-- noise-buffer-finish: ends a claim once its notification is enqueued (the claimed list and its
-- marks go); drops the route's marker unless the buffer refilled meanwhile (then the marker
-- restarts at ARGV[2], when given).
-- KEYS[1]  the buffer list (noise:group:<route> or noise:held:<route>)
-- KEYS[2]  the claimed list (<buffer>:claimed)
-- KEYS[3]  the marker hash (noise:group-since or noise:held-until)
-- KEYS[4]  the claimed list's marks (noise:held:<route>:closed:claimed)
-- ARGV[1]  route (the marker field)
-- ARGV[2]  the new marker value for a refilled buffer ('' = leave the marker)
-- Returns 1.
redis.call('DEL', KEYS[2], KEYS[4])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HDEL', KEYS[3], ARGV[1])
elseif ARGV[2] ~= '' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
return 1
