-- unwait.lua: a waiter gives up (deadline passed or error): drop its queue
-- marks so it holds nobody back (layout: see acquire.lua).
-- KEYS[1..3] as acquire.lua.  ARGV[1] owner.
-- When the last queued writer leaves while the lock is not held
-- exclusively, waiting readers are told to look again.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local was = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if was == 1 and redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) > 0
   and redis.call('HGET', KEYS[1], 'm') ~= 'x' then
  redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
end
return was
