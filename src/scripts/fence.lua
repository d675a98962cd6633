-- fence.lua: raise a fencing counter to at least a token given out
-- elsewhere (Redlock, src/exec/lock_quorum.c).  A quorum grant's token is the
-- highest of its granting masters' counters; it is written back to the
-- masters whose counters are lower until a majority has it, so that every
-- later majority includes a master whose next token is above it.
-- KEYS[1] the counter: a lock's <prefix>{T}:tokens, shared by the names of
--         its slot (see acquire.lua), or a primitive's step counter
--         (src/exec/prim_quorum.c)
-- ARGV[1] the token (decimal)
-- Returns the counter afterwards.
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if t and t > v then
  redis.call('SET', KEYS[1], ARGV[1])
  v = t
end
return v
