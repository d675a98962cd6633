-- cond.lua: every atomic step of a condition variable (rdcond_t,
-- docs/CONTRACT.md section 12), one op per call.
--
-- Keys of the condition named N (all under the hash tag {N}; the suffixes
-- differ from the lock's, the semaphore's and the barrier's):
--   KEYS[1] <prefix>{N}:cv     hash: 'n' = the last registration number
--                              given out, 'b' = the number up to which a
--                              broadcast woke every registration.  Created
--                              by the first call (rdcond_init); never
--                              expires (only a reset deletes it).
--   KEYS[2] <prefix>{N}:cv:h   hash: waiter owner -> "<deadline>;<number>;1;
--                              <pid>;<thread>;<call>;<host>", the layout of
--                              a lock holder, so that the watchdog renews a
--                              registration with renew.lua as it renews a
--                              lock.  PEXPIREd with its longest lease.
--   KEYS[3] <prefix>{N}:cv:q   zset: registrations not woken yet, by number
--                              (the order of registration: FIFO).
--   KEYS[4] <prefix>{N}:cv:p   zset: registrations woken by a signal whose
--                              waiter has not looked yet, by number.
--   KEYS[5] <prefix>{N}:cv:o:<owner>  string: the call number of this
--                              owner's last registration, kept ARGV[6] ms:
--                              a late or repeated copy of it registers
--                              nothing a second time.
--   channel <prefix>{N}:cv:c   "g <owner> <number>": that registration was
--                              signalled; "u": a broadcast, everyone looks.
--
-- A registration is woken when it is in KEYS[4] or its number is not above
-- 'b'.  A signal takes the first registration of KEYS[3] that is live (its
-- deadline, renewed by the watchdog, not past in the server's clock) and
-- not woken by a broadcast; dead ones it meets are dropped.  A signalled
-- registration whose waiter dies before it looks passes its signal on to
-- the next live one when its lease has run out (checked, a few at a time,
-- by every call that acts), so a signal never stays with a dead waiter.
-- Every registration enters and leaves each set once: amortised O(1) per
-- call (O(log n) for the sorted sets).
--
-- ARGV[1]  op: 'i' init, 'w' register, 'k' look (and end the wait if
--          woken), 'u' withdraw (a wait that gives up), 'x' withdraw at
--          process exit (a signal it had passes on), 's' signal,
--          'b' broadcast, 'r' reset (delete KEYS[1..4])
-- ARGV[2]  owner "<client id>:<thread>"
-- ARGV[3]  call number of this wait (increasing per owner)
-- ARGV[4]  server time (ms) after which this request is void, 0 none
-- ARGV[5]  lease ms of a registration
-- ARGV[6]  ms to keep KEYS[5]
-- ARGV[7]  "<pid>;<thread>", ARGV[8] host, ARGV[9] unused
-- Returns {status, now, x}:
--   'w'  {1, now, number} registered (a repeat of the same call: the same)
--   'k', 'u', 'x'  {1, now} woken (the wait is over: registration gone);
--        {0, now} not woken ('u', 'x': withdrawn); {-1, now} no such
--        registration (its lease ran out, or a reset): the wait is over
--   's'  {1, now} a waiter was signalled, {0, now} none waits
--   'b'  {1, now}
--   {-2, now} void: too late, or a newer call of this owner acted already
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, owner = ARGV[1], ARGV[2]
local chan = KEYS[1] .. ':c'

if op == 'r' then
  local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  redis.pcall('PUBLISH', chan, 'u')
  return {n}
end

if redis.call('HSETNX', KEYS[1], 'n', 0) == 1 then redis.call('HSET', KEYS[1], 'b', 0) end
if op == 'i' then return {1, now} end
local bseq = tonumber(redis.call('HGET', KEYS[1], 'b') or '0')

-- w's registration: deadline, number, call; nil if none.
local function reg(w)
  local v = redis.call('HGET', KEYS[2], w)
  if not v then return nil end
  local d, s, c = string.match(v, '^(%d+);(%d+);%d+;%d+;%d+;(%d+);')
  if not d then
    redis.call('HDEL', KEYS[2], w)
    return nil
  end
  return tonumber(d), tonumber(s), c
end

local function forget(w)
  redis.call('HDEL', KEYS[2], w)
  redis.call('ZREM', KEYS[3], w)
  redis.call('ZREM', KEYS[4], w)
end

-- Wake the first live registration not woken yet: true if there was one.
local function signal_one()
  while true do
    local f = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    if #f == 0 then return false end
    local w, sc = f[1], tonumber(f[2])
    redis.call('ZREM', KEYS[3], w)
    local d, s = reg(w)
    if d and s == sc then
      if d <= now then
        redis.call('HDEL', KEYS[2], w) -- dead: its signal goes to the next
      elseif s > bseq then
        redis.call('ZADD', KEYS[4], s, w)
        redis.pcall('PUBLISH', chan, 'g ' .. w .. ' ' .. s)
        return true
      end
      -- else woken by a broadcast already: it leaves the line
    end
  end
end

-- Signals held by waiters that died before they looked go on to the
-- next live waiter (the oldest few signalled, each call).
local function pass_on()
  local p = redis.call('ZRANGE', KEYS[4], 0, 3, 'WITHSCORES')
  for i = 1, #p, 2 do
    local w, sc = p[i], tonumber(p[i + 1])
    local d, s = reg(w)
    if not d or s ~= sc or d <= now then
      redis.call('ZREM', KEYS[4], w)
      if d and s == sc then redis.call('HDEL', KEYS[2], w) end
      signal_one()
    end
  end
end

local valid = tonumber(ARGV[4])
if valid > 0 and now > valid then return {-2, now} end

if op == 's' then
  pass_on()
  if signal_one() then return {1, now} end
  return {0, now}
end

if op == 'b' then
  local any = redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[4])
  redis.call('HSET', KEYS[1], 'b', redis.call('HGET', KEYS[1], 'n'))
  -- Every signalled registration is covered by the broadcast now.
  redis.call('DEL', KEYS[4])
  if any > 0 then redis.pcall('PUBLISH', chan, 'u') end
  return {1, now}
end

local call = tonumber(ARGV[3])

if op == 'w' then
  local rec = tonumber(redis.call('GET', KEYS[5]) or '')
  if rec and rec > call then return {-2, now} end
  if rec == call then
    -- A repeat of a registration whose answer was lost: the same one, if
    -- it is still there; if it has ended since, this copy is void.
    local d, s, c = reg(owner)
    if d and c == ARGV[3] then return {1, now, s} end
    return {-2, now}
  end
  pass_on()
  -- An older registration of this owner (a wait that could not end its
  -- own) is replaced; a signal it held goes to the next waiter, who was
  -- registered before this new one.
  local d0 = reg(owner)
  if d0 then
    local held = redis.call('ZREM', KEYS[4], owner)
    forget(owner)
    if held == 1 then signal_one() end
  end
  local lease = tonumber(ARGV[5])
  local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
  redis.call('HSET', KEYS[2], owner, (now + lease) .. ';' .. n .. ';1;' .. ARGV[7] .. ';' .. ARGV[3] .. ';' .. ARGV[8])
  if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
  redis.call('ZADD', KEYS[3], n, owner)
  redis.call('SET', KEYS[5], ARGV[3], 'PX', ARGV[6])
  return {1, now, n}
end

-- 'k', 'u', 'x': about the caller's registration of this call only, so a
-- late copy from an earlier wait finds another call and acts on nothing.
local d, s, c = reg(owner)
if not d or c ~= ARGV[3] then return {-1, now} end
local signalled = redis.call('ZSCORE', KEYS[4], owner)
if op == 'x' then
  forget(owner)
  if signalled then signal_one() end
  return {0, now}
end
if signalled or s <= bseq then
  forget(owner)
  return {1, now}
end
if op == 'u' or d <= now then
  forget(owner)
  if op == 'u' then return {0, now} end
  return {-1, now}
end
pass_on()
return {0, now}
