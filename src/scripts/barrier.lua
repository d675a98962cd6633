-- barrier.lua: every atomic step of a barrier (rdbarrier_t,
-- docs/CONTRACT.md section 12), one op per call.
--
-- Keys of the barrier named N (all under the hash tag {N}; the suffixes
-- differ from the lock's, the semaphore's and the condition's):
--   KEYS[1] <prefix>{N}:b      hash: 'n' = count (fixed when the name is
--                              created), 'g' = the current generation,
--                              'a' = arrivals counted in it.  Never
--                              expires (only a reset deletes it).
--   KEYS[2] <prefix>{N}:b:h    hash: owner -> "<deadline>;<generation>;1;
--                              <pid>;<thread>;<call>;<host>": an arrival,
--                              in the layout of a lock holder so that the
--                              watchdog renews it with renew.lua.
--   KEYS[3] <prefix>{N}:b:o:<owner>  string "<call>;<generation>", with
--                              ";s" if it completed that generation: the
--                              owner's last arrival, kept ARGV[6] ms, so a
--                              late or repeated copy does not arrive twice
--                              and a withdrawal of an arrival whose answer
--                              got lost can tell what it did.
--   channel <prefix>{N}:b:c    "u": a generation completed.
--
-- 'a' counts arrivals cheaply; only when it reaches the count are the
-- arrivals checked one by one (those whose lease ran out, their process
-- dead, are dropped and the generation waits on): O(count) once per
-- generation, amortised O(1) per arrival.
--
-- ARGV[1]  op: 'i' init, 'a' arrive, 'k' look, 'u' withdraw (a timed wait
--          that gives up, or process exit), 'r' reset (delete KEYS[1..2])
-- ARGV[2]  owner, ARGV[3] call number, ARGV[4] server time (ms) after
--          which the request is void (0 none), ARGV[5] lease ms, ARGV[6]
--          ms to keep KEYS[3], ARGV[7] "<pid>;<thread>", ARGV[8] host,
-- ARGV[9]  'i', 'a': the count (used if KEYS[1] is missing);
--          'k', 'u': the generation the caller arrived in
-- Returns {status, now, x}:
--   'i'  {1, now}; {-3, now, count} the name exists with another count
--   'a'  {1, now, generation} arrived, waiting; {2, now, generation}
--        arrived and completed it (the serial one); {3, now, generation}
--        (a repeat) released since, not the serial one
--   'k'  {1, now} released; {0, now} waiting; {-1, now} the arrival is
--        gone (its lease ran out, or a reset): arrive again
--   'u'  {1, now} released after all ({2, now}: generation 0, and the
--        arrival completed it: the serial one); {0, now} withdrawn
--   {-2, now} void: too late, or a newer call of this owner acted already
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, owner = ARGV[1], ARGV[2]
local chan = KEYS[1] .. ':c'

if op == 'r' then
  local n = redis.call('DEL', KEYS[1], KEYS[2])
  redis.pcall('PUBLISH', chan, 'u')
  return {n}
end

local st = redis.call('HMGET', KEYS[1], 'n', 'g', 'a')
if not st[1] then
  if op ~= 'i' and op ~= 'a' then return {-1, now} end
  redis.call('HSET', KEYS[1], 'n', ARGV[9], 'g', 1, 'a', 0)
  st = {ARGV[9], '1', '0'}
end
local count, gen, arrived = tonumber(st[1]), tonumber(st[2]), tonumber(st[3])
if op == 'i' then
  if count ~= tonumber(ARGV[9]) then return {-3, now, count} end
  return {1, now}
end

-- The caller's arrival: deadline, generation, call; nil if none.
local function mine()
  local v = redis.call('HGET', KEYS[2], owner)
  if not v then return nil end
  local d, g, c = string.match(v, '^(%d+);(%d+);%d+;%d+;%d+;(%d+);')
  if not d then
    redis.call('HDEL', KEYS[2], owner)
    return nil
  end
  return tonumber(d), tonumber(g), c
end

-- Drop the caller's arrival, uncounting it if it counts.
local function drop(g)
  redis.call('HDEL', KEYS[2], owner)
  if g == gen and arrived > 0 then
    arrived = arrived - 1
    redis.call('HSET', KEYS[1], 'a', arrived)
  end
end

-- The caller's last arrival (KEYS[3]): call, generation, and whether it
-- completed that generation (the serial one); nil if none.
local function record()
  local rec = redis.call('GET', KEYS[3])
  if not rec then return nil end
  local rc, rg, s = string.match(rec, '^(%d+);(%d+)(;?s?)$')
  if not rc then return nil end
  return tonumber(rc), tonumber(rg), s == ';s'
end

local valid = tonumber(ARGV[4])
if valid > 0 and now > valid then return {-2, now} end
local call = tonumber(ARGV[3])

if op == 'a' then
  local rc, rg, serial = record()
  if rc and rc > call then return {-2, now} end
  if rc == call then
    if gen > rg then
      if serial then return {2, now, rg} end
      return {3, now, rg}
    end
    return {1, now, rg}
  end
  local d0, g0 = mine()
  if d0 then drop(g0) end -- an earlier arrival of this owner that never ended
  local lease = tonumber(ARGV[5])
  redis.call('SET', KEYS[3], ARGV[3] .. ';' .. gen, 'PX', ARGV[6])
  if arrived + 1 >= count then
    -- Complete only with live arrivals: drop those whose lease ran out
    -- (their process died) and those left from earlier generations.
    local live = 0
    local h = redis.call('HGETALL', KEYS[2])
    for i = 1, #h, 2 do
      local d, g = string.match(h[i + 1], '^(%d+);(%d+);')
      if tonumber(g) ~= gen or tonumber(d) <= now then
        redis.call('HDEL', KEYS[2], h[i])
      else
        live = live + 1
      end
    end
    if live + 1 >= count then
      -- The others' arrivals stay until each one looks (their renewals
      -- must not find them gone); the next completion sweeps leftovers.
      redis.call('HSET', KEYS[1], 'g', gen + 1, 'a', 0)
      redis.call('SET', KEYS[3], ARGV[3] .. ';' .. gen .. ';s', 'PX', ARGV[6])
      redis.pcall('PUBLISH', chan, 'u')
      return {2, now, gen}
    end
    arrived = live
  end
  redis.call('HSET', KEYS[2], owner, (now + lease) .. ';' .. gen .. ';1;' .. ARGV[7] .. ';' .. ARGV[3] .. ';' .. ARGV[8])
  if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
  redis.call('HSET', KEYS[1], 'a', arrived + 1)
  return {1, now, gen}
end

-- 'k', 'u': the caller arrived in generation ARGV[9] with this call.
local mygen = tonumber(ARGV[9])
local d, g, c = mine()
-- Generation 0: the caller does not know whether its arrival (whose
-- answer got lost) happened, nor in which generation: the op record
-- (KEYS[3]) tells, including whether it completed one (then the
-- caller is the serial one: 2).
local serial = false
if mygen == 0 then
  local rc, rg, s = record()
  if rc == call then
    mygen, serial = rg, s
  elseif d and c == ARGV[3] then
    mygen = g
  else
    mygen = gen
  end
end
local minecall = d and c == ARGV[3] and g == mygen
if gen > mygen then
  if minecall then redis.call('HDEL', KEYS[2], owner) end
  if serial then return {2, now} end
  return {1, now}
end
if op == 'u' then
  if minecall then drop(g) end
  return {0, now}
end
if not minecall then return {-1, now} end
if d <= now then
  drop(g)
  return {-1, now}
end
return {0, now}
