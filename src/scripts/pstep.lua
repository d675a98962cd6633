-- pstep.lua: what turns a one-server step of a semaphore, condition
-- variable or barrier (sem.lua, cond.lua, barrier.lua) into a step on a
-- Redlock quorum (src/exec/prim_quorum.c says how the steps fit together).
--
-- The primitive's state lives whole on every master, as on one server;
-- a step takes a short quorum mutex, runs the primitive's own script on
-- one master that has the newest state (the leader), and copies the
-- state that results to every master it can, as one version.  The keys,
-- with P = the primitive's first key (<prefix>{N}:s, :cv or :b):
--   KEYS[1] P:Qx  string: the step mutex, the holder's token; PX its lease.
--   KEYS[2] P:Qc  string: the step counter, raised by every grant of the
--                 mutex and never deleted or expired: a step's version is
--                 the highest counter that its granting majority gave
--                 (written back to a majority before the step runs), so a
--                 later step's version is always higher.
--   KEYS[3] P:Qm  hash: 'v' = the version of the state here; 'o:<owner>'
--                 = "<expiry ms>;<value>", the owner's op record (the
--                 script's last key, P:o:<owner>) as of this version:
--                 part of the state, so a retried step finds its own
--                 earlier effect exactly when the leader's history holds
--                 it.  'n' = fields left after the last pruning.
--   KEYS[4..]     'b': the holder hash (lease records), if any;
--                 's', 'd', 'w': the primitive's state keys, then ('s',
--                 'd') its op record key.
--
-- ARGV[1] op:
--   'b' begin: ARGV[2] token, ARGV[3] mutex lease ms.  {1, counter,
--       version, holder hash as HGETALL, 1 | 0: the counter existed}
--       granted (counter 0 and 0: no history here, nothing raised);
--       {0, ms left} busy.
--   'e' end: give the mutex back if it is still ours (ARGV[2]).  {1}|{0}
--   's' sync, on the leader just before the step: ARGV[2] token, ARGV[3]
--       owner, ARGV[4] the index of the holder hash among KEYS (0 none),
--       then (field, entry) pairs: lease records that other masters saw
--       renewed later than this one did (the same hold: the entry's text
--       after the deadline is equal), raised here, and records that this
--       master lost on its own (the client found them on masters of the
--       same version), put back while their deadline is ahead.  The op
--       record key is set from 'o:<owner>' (or deleted).  {1} if the
--       mutex is ours.
--   'd' dump, on the leader just after the step: ARGV[2] token, ARGV[3]
--       owner, ARGV[4] ms to keep an op record that has no expiry.
--       Records the op record in KEYS[3], then returns {mutex ours 1|0,
--       DUMP, PTTL of each state key and of KEYS[3]} (false, -2: none).
--   'w' write, on every master that granted (the leader too): ARGV[2]
--       token, ARGV[3] the step's version, ARGV[4] the holder hash's
--       place among the state keys (1-based, 0 none), then 'd''s
--       (payload, pttl) pairs, in its order.  Only while the mutex is
--       ours and the version here is lower.  A renewal that reached this
--       master after the leader's dump is kept (the same hold, a later
--       deadline).  Sets the version and raises the step counter to it,
--       ends the mutex.  {1} written; {0} refused.
--   'v' versions: KEYS are P:Qm keys only; {version of each} (0: none).
local op = ARGV[1]

if op == 'v' then
  -- Read only (rdlock_status_kinds): the version of each KEYS[i], a P:Qm.
  local out = {}
  for i = 1, #KEYS do out[i] = tonumber(redis.call('HGET', KEYS[i], 'v') or '0') end
  return out
end

if op == 'b' then
  local cur = redis.call('GET', KEYS[1])
  if cur and cur ~= ARGV[2] then
    return {0, redis.call('PTTL', KEYS[1])}
  end
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  -- A master without the step counter has no history of the name: new,
  -- or restarted without its data.  It says so and is not counted until
  -- a step's write gives it the state (and the counter).
  local n = 0
  if redis.call('EXISTS', KEYS[2]) == 1 then n = redis.call('INCR', KEYS[2]) end
  local v = redis.call('HGET', KEYS[3], 'v') or '0'
  local h = {}
  if KEYS[4] then h = redis.call('HGETALL', KEYS[4]) end
  return {1, n, tonumber(v), h, n > 0 and 1 or 0}
end

local mine = redis.call('GET', KEYS[1]) == ARGV[2]

if op == 'e' then
  if mine then redis.call('DEL', KEYS[1]) return {1} end
  return {0}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- A late or duplicated copy of 's' or 'd' (the step is over: the mutex
-- is not ours) changes nothing.
if (op == 's' or op == 'd') and not mine then
  return {0}
end

if op == 's' then
  local okey = KEYS[#KEYS]
  local rec = redis.call('HGET', KEYS[3], 'o:' .. ARGV[3])
  local e, val
  if rec then e, val = string.match(rec, '^(%d+);(.*)$') end
  if e and tonumber(e) > now then
    redis.call('SET', okey, val, 'PX', tonumber(e) - now)
  else
    redis.call('DEL', okey)
  end
  local hi = tonumber(ARGV[4])
  if hi > 0 then
    local hk = KEYS[hi]
    for i = 5, #ARGV - 1, 2 do
      local f, ent = ARGV[i], ARGV[i + 1]
      local cur = redis.call('HGET', hk, f)
      local d1, r1, d2, r2
      if cur then d1, r1 = string.match(cur, '^(%d+)(;.*)$') end
      d2, r2 = string.match(ent, '^(%d+)(;.*)$')
      if d2 and ((not cur and tonumber(d2) > now) or (d1 and r1 == r2 and tonumber(d2) > tonumber(d1))) then
        redis.call('HSET', hk, f, ent)
        local want = tonumber(d2) - now
        if want > 0 and redis.call('PTTL', hk) < want then redis.call('PEXPIRE', hk, want) end
      end
    end
  end
  return {1}
end

if op == 'd' then
  local okey = KEYS[#KEYS]
  local val = redis.call('GET', okey)
  local f = 'o:' .. ARGV[3]
  if val then
    local pttl = redis.call('PTTL', okey)
    if pttl < 0 then pttl = tonumber(ARGV[4]) end
    redis.call('HSET', KEYS[3], f, (now + pttl) .. ';' .. val)
  else
    redis.call('HDEL', KEYS[3], f)
  end
  -- Op records of other owners run out; dropped, all at once, when the
  -- hash has doubled since the last time (amortised O(1) per step).
  local n = tonumber(redis.call('HGET', KEYS[3], 'n') or '8')
  if redis.call('HLEN', KEYS[3]) > 2 * n + 8 then
    local all = redis.call('HGETALL', KEYS[3])
    local left = 0
    for i = 1, #all, 2 do
      local e = string.match(all[i + 1], '^(%d+);')
      if string.sub(all[i], 1, 2) == 'o:' then
        if e and tonumber(e) <= now then redis.call('HDEL', KEYS[3], all[i]) else left = left + 1 end
      end
    end
    redis.call('HSET', KEYS[3], 'n', left)
  end
  local out = {1}
  for i = 4, #KEYS - 1 do
    out[#out + 1] = redis.call('DUMP', KEYS[i])
    out[#out + 1] = redis.call('PTTL', KEYS[i])
  end
  out[#out + 1] = redis.call('DUMP', KEYS[3])
  out[#out + 1] = redis.call('PTTL', KEYS[3])
  return out
end

if op == 'w' then
  local ver = tonumber(ARGV[3])
  if not mine or tonumber(redis.call('HGET', KEYS[3], 'v') or '0') >= ver then
    return {0}
  end
  -- KEYS[4..] then KEYS[3]: the order of 'd''s answer.
  local ks = {}
  for i = 4, #KEYS do ks[#ks + 1] = KEYS[i] end
  ks[#ks + 1] = KEYS[3]
  local hi = tonumber(ARGV[4])
  local before = {}
  if hi > 0 then before = redis.call('HGETALL', ks[hi]) end
  for i = 1, #ks do
    local p, ttl = ARGV[3 + 2 * i], tonumber(ARGV[4 + 2 * i])
    if p == '' then
      redis.call('DEL', ks[i])
    else
      if ttl < 0 then ttl = 0 end
      redis.call('RESTORE', ks[i], ttl, p, 'REPLACE')
    end
  end
  for i = 1, #before, 2 do
    local cur = redis.call('HGET', ks[hi], before[i])
    if cur then
      local d1, r1 = string.match(cur, '^(%d+)(;.*)$')
      local d2, r2 = string.match(before[i + 1], '^(%d+)(;.*)$')
      if d1 and d2 and r1 == r2 and tonumber(d2) > tonumber(d1) then
        redis.call('HSET', ks[hi], before[i], before[i + 1])
        local t = redis.call('TIME')
        local want = tonumber(d2) - (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
        if want > 0 and redis.call('PTTL', ks[hi]) < want then redis.call('PEXPIRE', ks[hi], want) end
      end
    end
  end
  redis.call('HSET', KEYS[3], 'v', ver)
  if tonumber(redis.call('GET', KEYS[2]) or '0') < ver then redis.call('SET', KEYS[2], ver) end
  redis.call('DEL', KEYS[1])
  return {1}
end

return redis.error_reply('pstep.lua: unknown op')
