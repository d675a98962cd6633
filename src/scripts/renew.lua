-- renew.lua: the watchdog's batch renewal (layout: see acquire.lua).
-- KEYS[i] the lock hash of hold i.  ARGV[4i-3] its owner, ARGV[4i-2] its
-- lease ms, ARGV[4i-1] its hold count now (recursion / read re-entry), kept
-- in the holder's value for `rdlock --status`, or '' to keep the count the
-- server has (a leased semaphore's permits: sem.lua counts them, and a
-- renewal must never undo a post that raced it), ARGV[4i] the call number
-- that took it (see acquire.lua).  Only that very hold is renewed: a late
-- or duplicated renewal of an earlier hold of the same owner finds another
-- call number and touches nothing.  A hold whose deadline already passed
-- is not revived: it is dropped and reported, so a stale owner never renews
-- a hold that may now be someone else's.  Returns the 1-based indices of
-- the holds that are gone.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lost = {}
for i = 1, #KEYS do
  local k, owner, lease = KEYS[i], ARGV[4 * i - 3], tonumber(ARGV[4 * i - 2])
  local v = redis.call('HGET', k, owner)
  local d, tok, cnt, rest, call
  if v then d, tok, cnt, rest, call = string.match(v, '^(%d+);(%d+);(%d+)(;%d+;%d+;(%d+);.*)$') end
  if d == nil or call ~= ARGV[4 * i] then
    lost[#lost + 1] = i
  elseif tonumber(d) <= now then
    redis.call('HDEL', k, owner)
    lost[#lost + 1] = i
  else
    if ARGV[4 * i - 1] ~= '' then cnt = ARGV[4 * i - 1] end
    -- string.format and PEXPIREAT: see acquire.lua's grant().
    local dl = string.format('%d', now + lease)
    redis.call('HSET', k, owner, dl .. ';' .. tok .. ';' .. cnt .. rest)
    local pttl = redis.call('PTTL', k)
    if pttl < lease then redis.call('PEXPIREAT', k, dl) end
  end
end
return lost
