-- release.lua: end this owner's hold (layout: see acquire.lua).
-- KEYS[1..3] as acquire.lua.  ARGV[1] owner.  (Which API may release which
-- mode is checked by the client, which knows how the hold was taken.)
-- Returns 1 when released, 0 when this owner held nothing live
-- (lease expired, taken over or deleted): the caller reports ENOLCK.
-- A stale owner can never delete someone else's hold: only its own field.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]

local v = redis.call('HGET', KEYS[1], owner)
if not v then return 0 end
local d = tonumber(string.match(v, '^(%d+);'))
local ok = (d ~= nil and d > now) and 1 or 0

local live = 0
if redis.call('HLEN', KEYS[1]) > 2 then
  -- Other holders (shared mode): drop our field and any expired ones.
  redis.call('HDEL', KEYS[1], owner)
  local h = redis.call('HGETALL', KEYS[1])
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
end
if live == 0 then
  redis.call('DEL', KEYS[1])
  -- Wake waiters only if there are any, so an uncontended release costs no
  -- PUBLISH.
  if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
    if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
      redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
    end
  end
end
return ok
