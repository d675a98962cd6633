-- reset.lua: clear a lock name: every hold, every queue mark and the robust
-- state (ENOTRECOVERABLE), keeping only the fencing counter, so tokens stay
-- strictly increasing (layout: see acquire.lua).  Waiters are told to look
-- again.  KEYS[1..7] as acquire.lua (KEYS[7], the readers' index, goes too).  Returns the number of keys deleted.
local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7])
redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
return n
