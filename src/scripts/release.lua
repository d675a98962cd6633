-- release.lua: end this owner's hold, or its wait (layout: see acquire.lua),
-- and hand a lock that became free to the head of the writers' queue.
-- KEYS[1..7] as acquire.lua (KEYS[7], the readers' index, is kept here
-- as there: a shared holder's field and member go together); KEYS[9]
-- the caller's grant list and KEYS[10] its finished-call mark, as there;
-- KEYS[8]
-- <prefix>{N}:rel, string
-- "<owner>;<call>": the last hold released here, kept a short while
-- (ARGV[4]) so that a retried release can prove that its first attempt,
-- whose answer got lost, is what removed the hold.
-- ARGV[1] owner
-- ARGV[2] 'rs' release a shared hold, 'rx' an exclusive one, 'rn' an
--         exclusive one handed over with EOWNERDEAD and not made
--         consistent (the lock becomes not recoverable); 'rd' end a hold
--         as its owner's death would (process exit): a shared one is
--         released, an exclusive one leaves its robust marker, exactly as
--         if its lease had run out now; 'ax' abandon an
--         exclusive grant the caller could not confirm on enough replicas
--         ([replication] wait_replicas): undone rather than ended, so the
--         robust state stays for the next robust acquirer: a marker the
--         grant carried ('?...': EOWNERDEAD not yet told to anyone) stays,
--         and one it replaced (ARGV[4], from acquire.lua) comes back;
--         'aq' the same for a Redlock grant without majority, without
--         waking anyone;
--         'u' unwait: stop waiting (also: give up a call whose attempts'
--         outcome is unknown).
--         'r*' may be followed by digits: an attempt of the hold's acquire
--         call got no answer and may arrive for that many ms yet; the
--         caller's finished-call mark (KEYS[10]) voids it meanwhile.
-- ARGV[3] the call number of the hold or the waiting call (see
--         acquire.lua): only that very hold or mark is touched, never a
--         newer one of the same owner (a late or duplicated release).
-- ARGV[4] unwait: the waiter's lease ms, which a hand-over found here
--         starts again with; 'ax': the marker the grant replaced ('' none);
--         'r*': how long (ms) to keep the proof of this release.
-- ARGV[5] 'rx' on Redlock only, optional: the dead owner's robust marker,
--         cleared here too if this master has it but not the hold.
-- Returns {status, kind, who, token}, or the bare integer status when kind
-- is 0 (the uncontended case: a table reply costs the server more to build
-- and encode than the rest of an exclusive release's Lua; src/proto/reply.c):
--   status, release: 1 released, 3 released already (by an earlier
--     attempt of this very release: KEYS[8] says so), 0 this owner held
--     nothing live with this call (lease expired, taken over or deleted:
--     the caller reports ENOLCK).  A stale owner can never delete someone
--     else's hold: only its own field.
--   status, unwait: 2 the lock had already been given to this call (who,
--     token say so: the caller holds it now), else 0.
--   kind: 0 nothing more; 1 the lock was handed to `who` with `token`;
--     2 waiting readers were told to enter.
-- Which API may release which mode is checked by the client.
-- Holder values: see acquire.lua.  PUBLISH goes through pcall: a server
-- user that may not publish (Redis 7 ACL) must not leave a release half
-- done (a script error does not undo the writes before it); waiters then
-- find out by their own looks.
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
local call = ARGV[3]
local status = 0
-- The call number in a holder value (field 6) or a queue mark (field 7).
local function call_of(v, mark)
  if not v then return nil end
  if mark then return string.match(v, '^%d+;%d+;%d+;%d+;%d+;%d+;(%d+);') end
  return string.match(v, '^%d+;%d+;%d+;%d+;%d+;(%d+);')
end

if op == 'a' then
  local m = redis.call('HGET', KEYS[1], 'm')
  if (m ~= 'x' and m ~= 'X') or call_of(redis.call('HGET', KEYS[1], owner)) ~= call then
    return 0
  end
  status = 1
  redis.call('DEL', KEYS[1], KEYS[7])
  if redis.call('GET', KEYS[6]) == owner then
    if ARGV[4] and ARGV[4] ~= '' then
      redis.call('SET', KEYS[6], ARGV[4])
    else
      redis.call('DEL', KEYS[6])
    end
  end
  -- 'aq': a Redlock grant without majority given back (lock_quorum.c):
  -- everyone who could want it took part in the vote and looks again by
  -- itself; a wake-up now would only start the next split vote at once.
  if how == 'q' or redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then return status end
elseif op == 'r' then
  -- First, whatever became of the hold: a late attempt must not take the
  -- lock again for a call whose unlock has run (acquire.lua: KEYS[10]).
  local keep = tonumber(string.sub(ARGV[2], 3))
  if keep and keep > 0 then redis.call('SET', KEYS[10], call, 'PX', keep) end
  local hv = redis.call('HMGET', KEYS[1], owner, 'm')
  local v = hv[1]
  if not v or call_of(v) ~= call then
    if how == 'x' and ARGV[5] then
      -- Redlock: this master did not grant the hold, and may still have
      -- the robust marker of the dead owner whose death the hold was told
      -- of (EOWNERDEAD) and made consistent: cleared, as on the masters
      -- that granted it.  A marker of anyone else stays.
      local m = redis.call('GET', KEYS[6])
      if m == ARGV[5] or m == '?' .. ARGV[5] then redis.call('DEL', KEYS[6]) end
    end
    if redis.call('GET', KEYS[8]) == owner .. ';' .. call then return 3 end
    return 0
  end
  -- The server's mode decides how to leave; the client's only says whether
  -- the hold is inconsistent ('n') or its owner is going away ('d').  Upper
  -- case: someone may wait (acquire.lua), so the queues are looked at below.
  local flagged = hv[2] == 'X' or hv[2] == 'S'
  if hv[2] ~= 'x' and hv[2] ~= 'X' then how = 's' end
  if how == 's' then
    local d = tonumber(string.match(v, '^(%d+);'))
    status = (d ~= nil and d > clock()) and 1 or 0
  else
    -- An exclusive holder's deadline is the key's own expiry (both are
    -- set together), so a field still here is a live hold.
    status = 1
  end
  if status == 1 then redis.call('SET', KEYS[8], owner .. ';' .. call, 'PX', ARGV[4]) end
  -- An exclusive holder is alone; only a shared one may have company.
  local hl = how == 's' and redis.call('HLEN', KEYS[1])
  if hl and hl > 2 then
    -- Other holders (shared mode): drop our field.
    redis.call('HDEL', KEYS[1], owner)
    local nz = redis.call('ZCARD', KEYS[7])
    if nz > 0 then
      -- (Defined here, the only place that needs them, so that no other
      -- release pays for making these closures.)
      -- The readers' index (KEYS[7], see acquire.lua): built from the fields h
      -- (an HGETALL reply) when it no longer matches the hash by count.
      local function sbuild(h)
        redis.call('DEL', KEYS[7])
        local args = {}
        for i = 1, #h, 2 do
          if h[i] ~= 'm' then
            args[#args + 1] = tonumber(string.match(h[i + 1], '^(%d+);')) or 0
            args[#args + 1] = h[i]
          end
          if #args >= 1000 or (i + 2 > #h and #args > 0) then
            redis.call('ZADD', KEYS[7], unpack(args))
            args = {}
          end
        end
        local pttl = redis.call('PTTL', KEYS[1])
        if pttl > 0 then redis.call('PEXPIRE', KEYS[7], pttl) end
      end

      -- Whether any share is live, and a date until which one surely is (ms,
      -- a lower bound of the latest deadline).  A member's score is its
      -- holder's deadline when granted; renewals (renew.lua) move only the field
      -- (they touch nothing but the lock's main key, so they go on while a
      -- Redis Cluster slot migrates), so a score is never later than its
      -- holder's deadline.  If even the highest score has passed, the holders
      -- behind the highest ones are looked at: the first live one is re-scored
      -- and answers; dead ones go, field and member.  Bounded: after SWEEP dead
      -- ones without an answer, it says live for 1 ms (the caller looks again).
      local SWEEP = 64
      local function slive(now)
        local top = redis.call('ZRANGE', KEYS[7], -1, -1, 'WITHSCORES')
        if not top[2] then return false, 0 end
        if tonumber(top[2]) > now then return true, tonumber(top[2]) end
        local c = redis.call('ZREVRANGEBYSCORE', KEYS[7], now, '-inf', 'LIMIT', 0, SWEEP)
        for _, f in ipairs(c) do
          local v = redis.call('HGET', KEYS[1], f)
          local d = v and tonumber(string.match(v, '^(%d+);'))
          if d and d > now then
            redis.call('ZADD', KEYS[7], d, f)
            return true, d
          end
          redis.call('ZREM', KEYS[7], f)
          if v then redis.call('HDEL', KEYS[1], f) end
        end
        if #c == SWEEP then return true, now + 1 end
        return false, 0
      end
      -- Many: the readers' index says whether any share is still live,
      -- without reading every field.
      nz = nz - redis.call('ZREM', KEYS[7], owner)
      if nz ~= hl - 2 then sbuild(redis.call('HGETALL', KEYS[1])) end
      if slive(clock()) then return status end
    else
      -- Few: read them, dropping expired ones.
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
      if live > 0 then return status end
    end
  end
  if how == 'x' then
    redis.call('DEL', KEYS[1], KEYS[6], KEYS[7]) -- a clean end: no robust marker
  elseif how == 'd' then
    redis.call('DEL', KEYS[1], KEYS[7]) -- the marker stays: the owner died inside
  else
    redis.call('DEL', KEYS[1], KEYS[7])
    if how == 'n' then redis.call('SET', KEYS[6], '!') end
  end
  -- An uncontended release ends here, without a PUBLISH, and without even
  -- looking at the queues if nobody queued while the hash existed.
  if not flagged or redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then return status end
else
  local was = 0
  if call_of(redis.call('HGET', KEYS[3], owner), true) == call then
    was = redis.call('ZREM', KEYS[2], owner)
    redis.call('HDEL', KEYS[3], owner)
  end
  redis.call('ZREM', KEYS[4], owner)
  local v = redis.call('HGET', KEYS[1], owner)
  if v and call_of(v) == call then
    local d, tok = string.match(v, '^(%d+);(%d+);')
    if tonumber(d) > clock() then
      -- Given to this call, which takes it after all: its lease starts
      -- again now, and a hand-over is claimed, as in acquire.lua.
      local lease = tonumber(ARGV[4])
      if lease then
        redis.call('HSET', KEYS[1], owner, (clock() + lease) .. string.match(v, '^%d+(;.*)$'))
        redis.call('ZADD', KEYS[7], 'XX', clock() + lease, owner) -- a share: its index entry
        if redis.call('PTTL', KEYS[1]) < lease then
          redis.call('PEXPIRE', KEYS[1], lease)
          redis.call('PEXPIRE', KEYS[7], lease)
        end
      end
      local m = redis.call('HGET', KEYS[1], 'm')
      if m == 'x' or m == 'X' then
        local xs = redis.call('GET', KEYS[6])
        if not xs or xs == '~' .. owner then
          redis.call('SET', KEYS[6], owner)
          redis.call('DEL', KEYS[9]) -- its grant, taken by this answer
        end
      end
      return {2, 1, owner, tonumber(tok)}
    end
  end
  if was == 0 then return 0 end
  if redis.call('EXISTS', KEYS[1]) == 1 then
    -- Still held.  If it is shared and no writer queues any more, the
    -- readers this writer held back may enter.
    local m = redis.call('HGET', KEYS[1], 'm')
    if m ~= 'x' and m ~= 'X' and redis.call('ZCARD', KEYS[2]) == 0 then
      redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', clock())
      if redis.call('ZCARD', KEYS[4]) > 0 then
        redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
        return {0, 2}
      end
    end
    return 0
  end
end

-- The lock is free and someone may wait.  Queued writers first (FIFO),
-- skipping marks that ran out; the head gets the lock here and now, so the
-- hand-over costs it no round trip.  With a robust marker left (an
-- unclean end, or not recoverable), everyone looks again instead, so that
-- acquire.lua gives out EOWNERDEAD / ENOTRECOVERABLE.
if redis.call('EXISTS', KEYS[6]) == 1 then
  redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
  -- The head may wait in BLPOP on its grant list (src/prim/handover.c), deaf
  -- to pub/sub: told there too.  A list of only "u" lives a minute.
  local hd = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if hd then
    local gk = KEYS[1] .. ':g:' .. hd
    if redis.pcall('RPUSH', gk, 'u') == 1 then redis.pcall('PEXPIRE', gk, 60000) end
  end
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
-- the lock is not handed to a dead waiter; so is a head whose mark does
-- not parse as far as its claim window (as one without a mark).
local head, v, claim, info = redis.call('ZRANGE', KEYS[2], 0, 0)[1], nil, nil, nil
while head do
  v = redis.call('HGET', KEYS[3], head)
  local d, l
  if v then d, l, claim, info = string.match(v, '^(%d+);(%d+);(%d+);(.*)$') end
  if d and clock() - (tonumber(d) - tonumber(l)) <= tonumber(l) / 2 then break end
  redis.call('ZREM', KEYS[2], head)
  redis.call('HDEL', KEYS[3], head)
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
end
if head and claim == '0' then
  -- A waiter that takes the lock itself (Redlock: acquire.lua's claim 0):
  -- every waiter looks again.
  redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
  return {status, 2}
end
if head then
  -- Handed over, but only for the head's claim window: the head claims
  -- it with its next look (acquire.lua: "this very call"), which starts
  -- its lease and sets the robust marker.  A head that died after its
  -- last look never claims: the grant lapses within the window, without
  -- a robust marker (nobody died inside), and the next waiter's look
  -- takes the lock.  So a dead waiter costs the others one claim window,
  -- not a lease, and never an EOWNERDEAD.
  claim = tonumber(claim)
  if claim < 1 then claim = 1 end
  local token = redis.call('INCR', KEYS[5])
  -- 'X': others may still queue behind the head (acquire.lua).
  redis.call('HSET', KEYS[1], 'm', 'X', head, (clock() + claim) .. ';' .. token .. ';' .. info)
  redis.call('PEXPIRE', KEYS[1], claim)
  redis.call('ZREM', KEYS[2], head)
  redis.call('HDEL', KEYS[3], head)
  -- The grant, straight to the head: it waits in BLPOP on this list
  -- (src/prim/handover.c) and holds the lock when the pop answers, with no
  -- claim round trip; its watchdog's first renewal starts the lease.  The
  -- marker '~<head>' (acquire.lua's handed()) makes a hold that then ends
  -- without unlock known to robust acquirers, while a head that died
  -- before its pop leaves its grant in the list: a clean end.  Pushed
  -- through pcall: a key of this slot that a Redis Cluster migration has
  -- moved already cannot be written here; the head then claims by its
  -- next look, as one that is not in BLPOP does (pub/sub, below).
  local gk = KEYS[1] .. ':g:' .. head
  if type(redis.pcall('RPUSH', gk, call_of(v, true) .. ';' .. token)) == 'number' then
    redis.pcall('PEXPIRE', gk, 86400000)
    redis.call('SET', KEYS[6], '~' .. head)
  end
  redis.pcall('PUBLISH', KEYS[1] .. ':c', 'g ' .. head .. ' ' .. token)
  return {status, 1, head, token}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', clock())
if redis.call('ZCARD', KEYS[4]) > 0 then
  redis.pcall('PUBLISH', KEYS[1] .. ':c', 'u')
  return {status, 2}
end
return status
