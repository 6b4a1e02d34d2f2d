-- noise-closed-in-quiet: a closing went out through a route's quiet hours (its kind excepted):
-- each lifecycle key is marked with the held list's length now, so the catch-up knows which of
-- its held transitions came before the closing (by position in the list, not by any clock). A
-- later mark is never smaller (the list only grows until it is claimed, and the marks move with
-- it). Nothing is marked when nothing is held.
-- KEYS[1]  the held list (noise:held:<route>)
-- KEYS[2]  its marks (noise:held:<route>:closed): lifecycle key -> held items before the closing
-- ARGV     lifecycle keys
-- Returns the held list's length.
local n = redis.call('LLEN', KEYS[1])
if n > 0 then
  for i = 1, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], n) end
end
return n
