-- release.lua: end this owner's hold, or its wait (layout: see acquire.lua),
-- and hand a lock that became free to the head of the writers' queue.
-- KEYS[1..6] as acquire.lua.
-- ARGV[1] owner
-- ARGV[2] 'rs' release a shared hold, 'rx' an exclusive one, 'rn' an
--         exclusive one handed over with EOWNERDEAD and not made
--         consistent (the lock becomes not recoverable); 'ax' abandon an
--         exclusive grant the caller could not confirm on enough replicas
--         ([replication] wait_replicas): undone rather than ended, so the
--         robust state stays for the next robust acquirer: a marker the
--         grant carried ('?...': EOWNERDEAD not yet told to anyone) stays,
--         and one it replaced (ARGV[3], from acquire.lua) comes back;
--         'u' unwait: stop waiting.
-- ARGV[3] unwait: the waiter's lease ms, which a hand-over found here
--         starts again with; 'ax': the marker the grant replaced ('' none).
-- ARGV[4] unwait: the waiting call's number (see acquire.lua): only a
--         hand-over to this very call is taken, never a leftover field of
--         an earlier hold of the same owner.
-- Returns {status, kind, who, token}:
--   status, release: 1 released, 0 this owner held nothing live (lease
--     expired, taken over or deleted: the caller reports ENOLCK).  A stale
--     owner can never delete someone else's hold: only its own field.
--   status, unwait: 2 the lock had already been handed to this owner (who,
--     token say so: the caller holds it now), else 0.
--   kind: 0 nothing more; 1 the lock was handed to `who` with `token`;
--     2 waiting readers were told to enter.
-- Which API may release which mode is checked by the client.
-- Holder values: see acquire.lua.
-- The server clock, read only when needed: TIME costs as much as the
-- rest of an uncontended release.
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
local owner, op, how = ARGV[1], string.sub(ARGV[2], 1, 1), string.sub(ARGV[2], 2, 2)
local status = 0

if op == 'a' then
  if redis.call('HGET', KEYS[1], 'm') ~= 'x' or not redis.call('HGET', KEYS[1], owner) then return {0, 0} end
  status = 1
  redis.call('DEL', KEYS[1])
  if redis.call('GET', KEYS[6]) == owner then
    if ARGV[3] and ARGV[3] ~= '' then
      redis.call('SET', KEYS[6], ARGV[3])
    else
      redis.call('DEL', KEYS[6])
    end
  end
  if redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then return {status, 0} end
elseif op == 'r' then
  local hv = redis.call('HMGET', KEYS[1], owner, 'm')
  local v = hv[1]
  if not v then return {0, 0} end
  -- The server's mode decides how to leave; the client's only says whether
  -- the hold is inconsistent ('n').
  if hv[2] ~= 'x' then how = 's' end
  if how == 's' then
    local d = tonumber(string.match(v, '^(%d+);'))
    status = (d ~= nil and d > clock()) and 1 or 0
  else
    -- An exclusive holder's deadline is the key's own expiry (both are
    -- set together), so a field still here is a live hold.
    status = 1
  end
  -- An exclusive holder is alone; only a shared one may have company.
  if how == 's' and redis.call('HLEN', KEYS[1]) > 2 then
    -- Other holders (shared mode): drop our field and any expired ones.
    redis.call('HDEL', KEYS[1], owner)
    local live = 0
    local h = redis.call('HGETALL', KEYS[1])
    for i = 1, #h, 2 do
      if h[i] ~= 'm' then
        local dd = tonumber(string.match(h[i + 1], '^(%d+);'))
        if dd == nil or dd <= clock() then
          redis.call('HDEL', KEYS[1], h[i])
        else
          live = live + 1
        end
      end
    end
    if live > 0 then return {status, 0} end
  end
  if how == 'x' then
    redis.call('DEL', KEYS[1], KEYS[6]) -- a clean end: no robust marker
  else
    redis.call('DEL', KEYS[1])
    if how == 'n' then redis.call('SET', KEYS[6], '!') end
  end
  -- An uncontended release ends here, without a PUBLISH.
  if redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then return {status, 0} end
else
  local was = redis.call('ZREM', KEYS[2], owner)
  redis.call('HDEL', KEYS[3], owner)
  redis.call('ZREM', KEYS[4], owner)
  local v = redis.call('HGET', KEYS[1], owner)
  if v and ARGV[4] and string.match(v, '^%d+;%d+;%d+;%d+;%d+;(%d+);') ~= ARGV[4] then v = nil end
  if v then
    local d, tok = string.match(v, '^(%d+);(%d+);')
    if tonumber(d) > clock() then
      -- Handed over to this owner, who now takes it after all: its lease
      -- starts again now, as for a hand-over found by acquire.lua.
      local lease = tonumber(ARGV[3])
      if lease then
        redis.call('HSET', KEYS[1], owner, (clock() + lease) .. string.match(v, '^%d+(;.*)$'))
        if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
      end
      return {2, 1, owner, tonumber(tok)}
    end
  end
  if was == 0 then return {0, 0} end
  if redis.call('EXISTS', KEYS[1]) == 1 then
    -- Still held.  If it is shared and no writer queues any more, the
    -- readers this writer held back may enter.
    if redis.call('HGET', KEYS[1], 'm') ~= 'x' and redis.call('ZCARD', KEYS[2]) == 0 then
      redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', clock())
      if redis.call('ZCARD', KEYS[4]) > 0 then
        redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
        return {0, 2}
      end
    end
    return {0, 0}
  end
end

-- The lock is free and someone may wait.  Queued writers first (FIFO),
-- skipping marks that ran out; the head gets the lock here and now, so the
-- hand-over costs it no round trip.  With a robust marker left (an
-- unclean end, or not recoverable), everyone looks again instead, so that
-- acquire.lua gives out EOWNERDEAD / ENOTRECOVERABLE.
if redis.call('EXISTS', KEYS[6]) == 1 then
  redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
  return {status, 2}
end
local wq = redis.call('HGETALL', KEYS[3])
for i = 1, #wq, 2 do
  local d = tonumber(string.match(wq[i + 1], '^(%d+);'))
  if d == nil or d <= clock() then
    redis.call('HDEL', KEYS[3], wq[i])
    redis.call('ZREM', KEYS[2], wq[i])
  end
end
-- A head silent for half its lease crashed (see acquire.lua): skip it, so
-- the lock is not handed to a dead waiter.
local head, v = redis.call('ZRANGE', KEYS[2], 0, 0)[1], nil
while head do
  v = redis.call('HGET', KEYS[3], head)
  local d, l
  if v then d, l = string.match(v, '^(%d+);(%d+);') end
  if d and clock() - (tonumber(d) - tonumber(l)) <= tonumber(l) / 2 then break end
  redis.call('ZREM', KEYS[2], head)
  redis.call('HDEL', KEYS[3], head)
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
end
if head then
  local wlease, info = string.match(v, '^%d+;(%d+);(.*)$')
  wlease = tonumber(wlease)
  local token = redis.call('INCR', KEYS[5])
  redis.call('HSET', KEYS[1], 'm', 'x', head, (clock() + wlease) .. ';' .. token .. ';' .. info)
  redis.call('PEXPIRE', KEYS[1], wlease)
  redis.call('SET', KEYS[6], head)
  redis.call('ZREM', KEYS[2], head)
  redis.call('HDEL', KEYS[3], head)
  redis.call('PUBLISH', KEYS[1] .. ':c', 'g ' .. head .. ' ' .. token)
  return {status, 1, head, token}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', clock())
if redis.call('ZCARD', KEYS[4]) > 0 then
  redis.call('PUBLISH', KEYS[1] .. ':c', 'u')
  return {status, 2}
end
return {status, 0}
