-- noise-buffer-claim: takes a route's buffer for flushing: the list is renamed to its claimed
-- list, so transitions buffered meanwhile start a new one; the list's closed-in-quiet marks go
-- with it. An unfinished earlier claim is returned as it was.
-- KEYS[1]  the buffer list (noise:group:<route> or noise:held:<route>)
-- KEYS[2]  the claimed list (<buffer>:claimed)
-- KEYS[3]  the buffer's marks (noise:held:<route>:closed; never set for a group buffer)
-- KEYS[4]  the claimed list's marks (<marks>:claimed)
-- ARGV     none
-- Returns the claimed list's items.
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('DEL', KEYS[4])
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('RENAME', KEYS[3], KEYS[4]) end
end
return redis.call('LRANGE', KEYS[2], 0, -1)
