-- fence.lua: raise a lock's fencing counter to at least a token given out
-- elsewhere (Redlock, src/exec/lock_quorum.c).  A quorum grant's token is the
-- highest of its granting masters' counters; it is written back to the
-- masters whose counters are lower until a majority has it, so that every
-- later majority includes a master whose next token is above it.
-- KEYS[1] <prefix>{N}:fence (see acquire.lua)
-- ARGV[1] the token (decimal)
-- Returns the counter afterwards.
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if t and t > v then
  redis.call('SET', KEYS[1], ARGV[1])
  v = t
end
return v
