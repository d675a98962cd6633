-- renew.lua: the watchdog's batch renewal (layout: see acquire.lua).
-- KEYS[i] the lock hash of hold i.  ARGV[3i-2] its owner, ARGV[3i-1] its
-- lease ms, ARGV[3i] its hold count now (recursion / read re-entry), kept
-- in the holder's value for `rdlock --status`.  A hold whose deadline
-- already passed is not revived: it is dropped and reported, so a stale
-- owner never renews a hold that may now be someone else's.  Returns the
-- 1-based indices of the holds that are gone.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lost = {}
for i = 1, #KEYS do
  local k, owner, lease = KEYS[i], ARGV[3 * i - 2], tonumber(ARGV[3 * i - 1])
  local v = redis.call('HGET', k, owner)
  local d, tok, rest
  if v then d, tok, rest = string.match(v, '^(%d+);(%d+);%d+(;.*)$') end
  if d == nil or tonumber(d) <= now then
    if v then redis.call('HDEL', k, owner) end
    lost[#lost + 1] = i
  else
    redis.call('HSET', k, owner, (now + lease) .. ';' .. tok .. ';' .. ARGV[3 * i] .. rest)
    local pttl = redis.call('PTTL', k)
    if pttl < lease then redis.call('PEXPIRE', k, lease) end
  end
end
return lost
