-- release.lua: end this owner's hold (layout: see acquire.lua).
-- KEYS[1..3] as acquire.lua.  ARGV[1] owner  ARGV[2] mode 'x'|'s'
-- Returns 1 when released, 0 when this owner held nothing live in that mode
-- (lease expired, taken over or deleted): the caller reports ENOLCK.
-- A stale owner can never delete someone else's hold: only its own field.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]

local v = redis.call('HGET', KEYS[1], owner)
if not v then return 0 end
redis.call('HDEL', KEYS[1], owner)
local d = tonumber(string.match(v, '^(%d+);'))
local ok = 1
if d == nil or d <= now or redis.call('HGET', KEYS[1], 'm') ~= ARGV[2] then ok = 0 end

-- Is anyone left holding it?  Expired fields of other holders are pruned.
local h = redis.call('HGETALL', KEYS[1])
local live = 0
for i = 1, #h, 2 do
  if h[i] ~= 'm' then
    local dd = tonumber(string.match(h[i + 1], '^(%d+);'))
    if dd == nil or dd <= now then
      redis.call('HDEL', KEYS[1], h[i])
    else
      live = live + 1
    end
  end
end
if live == 0 then
  redis.call('DEL', KEYS[1])
  -- Wake waiters only if there are any, so an uncontended release costs no
  -- PUBLISH.
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3]) > 0 then
    redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
  end
end
return ok
