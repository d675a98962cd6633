-- reset.lua: clear a lock name: every hold, every queue mark and the robust
-- state (ENOTRECOVERABLE), never the fencing counter (shared by the slot's
-- names) nor a name's counter of an earlier version, so tokens stay
-- strictly increasing (layout: see acquire.lua).  Waiters are told to look
-- again.  KEYS[1..7] as acquire.lua (KEYS[7], the readers' index, goes too).  Returns the number of keys deleted.
-- Queued writers may wait in BLPOP on their grant lists (acquire.lua's
-- KEYS[9]), deaf to pub/sub: each is told to look again there; a
-- hand-over's marker "~<owner>" takes its grant list along.
local x = redis.call('GET', KEYS[6])
if x and string.sub(x, 1, 1) == '~' then redis.pcall('DEL', KEYS[1] .. ':g:' .. string.sub(x, 2)) end
for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local gk = KEYS[1] .. ':g:' .. w
  if redis.pcall('RPUSH', gk, 'u') == 1 then redis.pcall('PEXPIRE', gk, 60000) end
end
local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7])
redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
return n
