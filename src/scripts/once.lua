-- once.lua: the "done" mark of rdonce() (docs/CONTRACT.md section 12).
-- KEYS[1] <prefix>{N}:once  string: who ran the function of name N, set
-- once it has returned; never expires (only a reset deletes it).  The run
-- itself is guarded by the lock of name N (its keys: acquire.lua), so
-- that one caller runs the function and the others wait in its queue.
-- ARGV[1] 'c' is it done?  {1, mark} or {0}
--         's' mark it done: ARGV[2] "<owner>;<pid>;<host>"; a repeat keeps
--             the first mark.  {1}
--         'r' reset: delete the mark.  {n}
local op = ARGV[1]
if op == 'c' then
  local v = redis.call('GET', KEYS[1])
  if v then return {1, v} end
  return {0}
elseif op == 's' then
  redis.call('SET', KEYS[1], ARGV[2], 'NX')
  return {1}
end
return {redis.call('DEL', KEYS[1])}
