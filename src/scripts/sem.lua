-- sem.lua: every atomic step of a counting semaphore (rdsem_t,
-- docs/CONTRACT.md section 12), one op per call.
--
-- Keys of the semaphore named N (all under the hash tag {N}, so one Redis
-- Cluster slot serves them; apart from the lock of the same name, whose
-- keys end in "{N}" or "{N}:<suffix>" with other suffixes):
--   KEYS[1] <prefix>{N}:s      hash: 't' = 'p' (plain) | 'l' (leased);
--                              'v' = plain: the value (free permits);
--                              leased: the number of permits (fixed).
--                              Created by the first call that finds it
--                              missing, with that caller's initial value;
--                              never expires (only a reset deletes it).
--   KEYS[2] <prefix>{N}:s:h    hash, leased only: holder owner ->
--                              "<deadline>;0;<count>;<pid>;<thread>;<call>;<host>"
--                              (the layout of a lock holder, so renew.lua
--                              renews it; <count> permits held, <call> the
--                              call that started the hold: its identity).
--                              PEXPIREd with its longest lease.  Free
--                              permits = 'v' - the counts of live holders.
--   KEYS[3] <prefix>{N}:s:w    zset: waiters in order of arrival (FIFO):
--                              each joins with a score above every score
--                              in the line (its arrival time, or more).
--   KEYS[4] <prefix>{N}:s:wq   hash: waiter -> "<mark deadline>;<lease>;<call>;
--                              <pid>;<thread>;<host>", refreshed by each look.
--   KEYS[5] <prefix>{N}:s:o:<owner>  string: the call number of the last
--                              take or post of this owner that took effect,
--                              kept ARGV[10] ms: what makes a retried
--                              request (whose answer got lost) do nothing a
--                              second time, and a late copy of an older
--                              call void.
--   channel <prefix>{N}:s:c    "u": waiters look again (a permit came free).
--                              Published only when someone waits.
--
-- A waiter may take a permit when there are free permits and fewer live
-- waiters ahead of it than free permits (FIFO); a try never queues and
-- takes any free permit.  A waiter whose mark ran out, or that has not
-- looked for half its mark's lease (a live one looks every third), is
-- dropped from the queue.
--
-- ARGV[1]  op: 'i' init, 't' take (a look of a wait or a try), 'p' post,
--          'd' drop a leased hold whole (process exit), 'u' unwait (stop
--          waiting; finds a take whose answer was lost), 'g' value,
--          'r' reset (delete KEYS[1..4])
-- ARGV[2]  owner "<client id>:<thread>"
-- ARGV[3]  type 'p' | 'l', ARGV[4] initial value (used if KEYS[1] is missing)
-- ARGV[5]  call number of this call (increasing per owner)
-- ARGV[6]  server time (ms) after which this request is void, 0 none
-- ARGV[7]  take: "<waiting><queued>" ('1'/'0' each)
-- ARGV[8]  lease ms (leased holds, queue marks)
-- ARGV[9]  leased: the call that started the caller's hold, '0' none
-- ARGV[10] ms to keep KEYS[5]
-- ARGV[11] "<pid>;<thread>", ARGV[12] host
-- Returns {status, now, x}:
--   't'  {1, now, hold call} taken (a repeat of a take that took: the same);
--        {0, now, hint} busy, hint = ms until a holder's lease ends (0: none)
--   'p', 'd'  {1, now} posted; {3, now} posted already by this very call;
--        {0, now} leased: the caller holds no live permit of that hold (its
--        lease ran out, or it was reset): nothing done; {-4, now} the value
--        would pass RDSEM_VALUE_MAX
--   'u'  {2, now, hold call} the call took a permit after all; {0, now}
--   'g'  {1, now, free permits};  'i' {1, now, value}
--   {-2, now} void: too late, or a newer call of this owner acted already
--   {-3, now, type} the name is a semaphore of the other type
local MAX = 2147483647
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, owner, typ = ARGV[1], ARGV[2], ARGV[3]

if op == 'r' then
  local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
  return {n}
end

local st = redis.call('HMGET', KEYS[1], 't', 'v')
if not st[1] or not st[2] then
  redis.call('HSET', KEYS[1], 't', typ, 'v', ARGV[4])
  st = {typ, ARGV[4]}
end
if st[1] ~= typ then return {-3, now, st[1]} end
local total = tonumber(st[2])
local leased = typ == 'l'
if op == 'i' then return {1, now, total} end

local call = tonumber(ARGV[5])
local valid = tonumber(ARGV[6])
local lease = tonumber(ARGV[8])

-- Leased: the permits held now (expired holders are removed), and the
-- earliest end of a live lease.
local function held_now()
  if not leased then return 0, nil end
  local h = redis.call('HGETALL', KEYS[2])
  local held, mind = 0, nil
  for i = 1, #h, 2 do
    local d, cnt = string.match(h[i + 1], '^(%d+);%d+;(%d+);')
    d = tonumber(d)
    if d == nil or d <= now then
      redis.call('HDEL', KEYS[2], h[i])
    else
      held = held + tonumber(cnt)
      if mind == nil or d < mind then mind = d end
    end
  end
  return held, mind
end

local function wake(free)
  if free > 0 and redis.call('ZCARD', KEYS[3]) > 0 then
    redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
  end
end

-- The caller's live hold value, its count and its call (leased).
local function my_hold()
  local v = redis.call('HGET', KEYS[2], owner)
  if not v then return nil end
  local d, cnt, hc = string.match(v, '^(%d+);%d+;(%d+);%d+;%d+;(%d+);')
  if not d then
    redis.call('HDEL', KEYS[2], owner)
    return nil
  end
  if tonumber(d) <= now then
    redis.call('HDEL', KEYS[2], owner)
    return nil
  end
  return v, tonumber(cnt), hc
end

if op == 'g' then
  local held = held_now()
  local free = total - held
  if free < 0 then free = 0 end
  return {1, now, free}
end

-- Every request that can act names its call: a late copy of an older call
-- acts on nothing, a repeat of one that acted does not act again.
if valid > 0 and now > valid then return {-2, now} end
local rec = tonumber(redis.call('GET', KEYS[5]) or '')

if op == 'u' then
  local mv = redis.call('HGET', KEYS[4], owner)
  if mv and tonumber(string.match(mv, '^%d+;%d+;(%d+);')) == call then
    redis.call('ZREM', KEYS[3], owner)
    redis.call('HDEL', KEYS[4], owner)
  end
  if rec == call then
    -- Taken by an attempt whose answer was lost: the caller has it.  Its
    -- lease starts again now, as the caller dates it from this request.
    local hc = '0'
    if leased then
      local v, cnt, c = my_hold()
      if v then
        hc = c
        redis.call('HSET', KEYS[2], owner, (now + lease) .. string.match(v, '^%d+(;.*)$'))
        if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
      end
    end
    return {2, now, hc}
  end
  -- Waiters behind this one may be entitled now.
  wake(total - held_now())
  return {0, now}
end

if rec and rec > call then return {-2, now} end

if op == 't' then
  local waiting, queued = string.sub(ARGV[7], 1, 1) == '1', string.sub(ARGV[7], 2, 2) == '1'
  local mv = redis.call('HGET', KEYS[4], owner)
  -- A mark whose call does not parse says nothing of its call: as none.
  local mc = mv and tonumber(string.match(mv, '^%d+;%d+;(%d+);'))
  if mc and mc > call then return {-2, now} end
  if rec == call then
    -- This very call took a permit already (a retry after a lost answer).
    local hc = '0'
    if leased then
      local v, cnt, c = my_hold()
      if v then hc = c end
    end
    return {1, now, hc}
  end
  local held, mind = held_now()
  local free = total - held
  -- The live queue, and the caller's place in it.
  local live, pos, removed = 0, nil, false
  for _, w in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local v = redis.call('HGET', KEYS[4], w)
    local d, l
    if v then d, l = string.match(v, '^(%d+);(%d+);') end
    d, l = tonumber(d), tonumber(l)
    if d and d > now and now - (d - l) <= l / 2 then
      if w == owner then pos = live end
      live = live + 1
    else
      redis.call('ZREM', KEYS[3], w)
      redis.call('HDEL', KEYS[4], w)
      removed = true
    end
  end
  local rank = pos or live
  if free > 0 and (not waiting or rank < free) then
    local hc = '0'
    if leased then
      local v, cnt, c = my_hold()
      local pt = ARGV[11]
      if v and c == ARGV[9] then
        hc = c
        cnt = cnt + 1
      else
        -- A leftover of an earlier hold of this owner that the caller no
        -- longer knows of is discarded; the take starts a new hold.
        hc = ARGV[5]
        cnt = 1
      end
      redis.call('HSET', KEYS[2], owner, (now + lease) .. ';0;' .. cnt .. ';' .. pt .. ';' .. hc .. ';' .. ARGV[12])
      if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
    else
      redis.call('HINCRBY', KEYS[1], 'v', -1)
    end
    redis.call('SET', KEYS[5], ARGV[5], 'PX', ARGV[10])
    if pos or queued then
      redis.call('ZREM', KEYS[3], owner)
      redis.call('HDEL', KEYS[4], owner)
      if pos then live = live - 1 end
    end
    if free - 1 > 0 and live > 0 then redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u') end
    return {1, now, hc}
  end
  if waiting and not pos then
    -- Joins the line behind everyone in it, whatever their scores: a
    -- score of its own arrival time alone would tie with a waiter that
    -- came in the same millisecond (and ties go by owner, a random id),
    -- or sort before one that came before the server's clock stepped
    -- back.  An entry that stays (pos) keeps its place in line.
    local score = now
    local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    if last[2] and tonumber(last[2]) >= score then score = tonumber(last[2]) + 1 end
    redis.call('ZADD', KEYS[3], 'NX', score, owner)
  end
  if waiting then
    redis.call('HSET', KEYS[4], owner, (now + lease) .. ';' .. lease .. ';' .. ARGV[5] .. ';' .. ARGV[11] .. ';' .. ARGV[12])
  end
  -- A dead waiter dropped here may have stood in front of live ones.
  if removed and free > 0 then wake(free) end
  local hint = 0
  if free <= 0 and mind then hint = mind - now end
  return {0, now, hint}
end

-- 'p', 'd': give a permit back.
if rec == call then return {3, now} end
if leased then
  local v, cnt, hc = my_hold()
  if not v or hc ~= ARGV[9] then return {0, now} end
  if op == 'd' or cnt <= 1 then
    redis.call('HDEL', KEYS[2], owner)
  else
    local d = string.match(v, '^(%d+);')
    redis.call('HSET', KEYS[2], owner, d .. ';0;' .. (cnt - 1) .. string.match(v, '^%d+;%d+;%d+(;.*)$'))
  end
  redis.call('SET', KEYS[5], ARGV[5], 'PX', ARGV[10])
  wake(total - held_now())
  return {1, now}
end
if total >= MAX then return {-4, now} end
redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('SET', KEYS[5], ARGV[5], 'PX', ARGV[10])
wake(total + 1)
return {1, now}
