-- noise-closed-in-quiet: a closing went out through a route's quiet hours (its kind excepted):
-- its lifecycle key is marked with the held list's length now and the closing's observedAt, so
-- the catch-up knows which of its held transitions came before the closing. Nothing is marked
-- when nothing is held.
-- KEYS[1]  the held list (noise:held:<route>)
-- KEYS[2]  its marks (noise:held:<route>:closed): lifecycle key -> '<held items>:<observedAt>'
-- ARGV[1]  the closing's observedAt (Unix ms)
-- ARGV[2..]  lifecycle keys
-- Returns the held list's length.
local n = redis.call('LLEN', KEYS[1])
if n > 0 and #ARGV > 1 then
  local args = {}
  for i = 2, #ARGV do
    args[#args + 1] = ARGV[i]
    args[#args + 1] = n .. ':' .. ARGV[1]
  end
  redis.call('HSET', KEYS[2], unpack(args))
end
return n
