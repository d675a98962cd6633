-- kinds.lua: a snapshot of the other primitives of one name, for
-- rdlock_status_kinds() and `rdlock --status` (docs/CONTRACT.md sections 8
-- and 12): its semaphore, run-once mark, condition variable and barrier,
-- read in one atomic step.  Read-only: it writes, expires and publishes
-- nothing, so looking at a name never creates or changes any of them
-- (the scripts of the primitives create their state on first use).
-- Cost: O(1) per kind, plus one pass over the semaphore's holders and
-- waiters, the condition's registrations and the barrier's arrivals (the
-- threads using the name: bounded, as the lock's status.lua is).
--
-- KEYS (all under the hash tag {N}; layouts: sem.lua, once.lua, cond.lua,
-- barrier.lua):
--   1 <prefix>{N}:s   2 :s:h   3 :s:w   4 :s:wq      (semaphore)
--   5 <prefix>{N}:once                               (run-once mark)
--   6 <prefix>{N}:cv  7 :cv:h  8 :cv:p              (condition)
--   9 <prefix>{N}:b   10 :b:h                        (barrier)
-- Returns {now, sem, once, cond, barrier}, each of the last four {} when
-- the name has no such thing, else:
--   sem      {type 'p'|'l', value (plain: the count; leased: the permits
--            in all), permits held under a live lease, holders, live
--            waiters}
--   once     {mark}: "<owner>;<pid>;<host>" of the run
--   cond     {registrations numbered so far, live registrations not woken,
--            live registrations woken (signal or broadcast) not returned}
--   barrier  {count, generation, live arrivals in it}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local sem = {}
local st = redis.call('HMGET', KEYS[1], 't', 'v')
if st[1] and st[2] then
  local held, holders = 0, 0
  if st[1] == 'l' then
    local h = redis.call('HGETALL', KEYS[2])
    for i = 1, #h, 2 do
      local d, cnt = string.match(h[i + 1], '^(%d+);%d+;(%d+);')
      if d and tonumber(d) > now then
        held = held + tonumber(cnt)
        holders = holders + 1
      end
    end
  end
  -- Live waiters, as sem.lua counts them: mark not run out, and looked
  -- within half its lease.
  local waiting = 0
  for _, w in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local v = redis.call('HGET', KEYS[4], w)
    local d, l
    if v then d, l = string.match(v, '^(%d+);(%d+);') end
    d, l = tonumber(d), tonumber(l)
    if d and d > now and now - (d - l) <= l / 2 then waiting = waiting + 1 end
  end
  sem = {st[1], tonumber(st[2]), held, holders, waiting}
end

local once = {}
local mark = redis.call('GET', KEYS[5])
if mark then once = {mark} end

local cond = {}
local cv = redis.call('HMGET', KEYS[6], 'n', 'b')
if cv[1] then
  local bseq = tonumber(cv[2] or '0')
  local waiters, woken = 0, 0
  local h = redis.call('HGETALL', KEYS[7])
  for i = 1, #h, 2 do
    local d, s = string.match(h[i + 1], '^(%d+);(%d+);')
    if d and tonumber(d) > now then
      if tonumber(s) <= bseq or redis.call('ZSCORE', KEYS[8], h[i]) then
        woken = woken + 1
      else
        waiters = waiters + 1
      end
    end
  end
  cond = {tonumber(cv[1]), waiters, woken}
end

local barrier = {}
local b = redis.call('HMGET', KEYS[9], 'n', 'g')
if b[1] then
  local gen, arrived = tonumber(b[2] or '1'), 0
  local h = redis.call('HGETALL', KEYS[10])
  for i = 1, #h, 2 do
    local d, g = string.match(h[i + 1], '^(%d+);(%d+);')
    if d and tonumber(d) > now and tonumber(g) == gen then arrived = arrived + 1 end
  end
  barrier = {tonumber(b[1]), gen, arrived}
end

return {now, sem, once, cond, barrier}
