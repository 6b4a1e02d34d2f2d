-- noise-buffer-claim: takes a route's buffer for flushing: the list is renamed to its claimed
-- list, so transitions buffered meanwhile start a new one. An unfinished earlier claim is
-- returned as it was.
-- KEYS[1]  the buffer list (noise:group:<route> or noise:held:<route>)
-- KEYS[2]  the claimed list (<buffer>:claimed)
-- ARGV     none
-- Returns the claimed list's items.
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
end
return redis.call('LRANGE', KEYS[2], 0, -1)
