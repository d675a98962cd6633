-- acquire.lua: take one lock name in exclusive ('x') or shared ('s') mode.
--
-- Key layout of one lock name N (all keys share the hash tag {N}, so Redis
-- Cluster keeps them in one slot; written down here once for both modes):
--   KEYS[1] <prefix>{N}        hash: field 'm' = 'x' | 's' (mode), upper
--                              case ('X' | 'S') once someone may wait for
--                              the lock: set by the grant that found queue
--                              marks (KEYS[2], KEYS[4]) and by each caller
--                              that queues while the hash exists, so that
--                              a release of a lower-case hold needs no look
--                              at the queues (release.lua); and one
--                              field per holder: owner id ->
--                              "<deadline ms>;<token>;<count>;<pid>;<thread>;<call>;<host>"
--                              (<call>: a number unique per acquire call of the
--                              client, so a retried call is told from a
--                              leftover of an earlier hold of the same owner)
--                              deadline is server time (TIME); the key's own
--                              PEXPIRE covers the longest live holder, so a
--                              dead sole holder's lock vanishes by itself.
--   KEYS[2] <prefix>{N}:w      zset: the queue of waiting exclusive callers
--                              (writers), score = arrival (server ms, made
--                              strictly increasing): FIFO.  It and KEYS[3],
--                              KEYS[4] expire with their longest mark
--                              (outlive() below).
--                              A queued writer holds back new readers (writer
--                              preference); only the head may take a free
--                              lock, and a release hands the lock straight to
--                              the head.
--   KEYS[3] <prefix>{N}:wq     hash: queued writer -> "<mark deadline>;<lease>;
--                              <claim>;<count>;<pid>;<thread>;<call>;<host>":
--                              the mark's own lease (refreshed by each try),
--                              and what a hand-over needs: the lease, and the
--                              claim window within which the writer must
--                              claim a lock handed to it (see release.lua).
--   KEYS[4] <prefix>{N}:r      zset: waiting readers, score = mark deadline;
--                              for wake-ups only.
--   KEYS[5] <prefix>{T}:tokens the fencing counter, shared by every name of
--                              the slot: T is the tag chosen for the slot
--                              of {N} (src/proto/slottag.h), so the key is
--                              in the name's slot; never expired or
--                              deleted, so each name's tokens strictly
--                              increase, and a name leaves no counter of
--                              its own behind.
--   KEYS[6] <prefix>{N}:x      string, robust state of the exclusive mode:
--                              absent = clean; "<owner>" = the exclusive
--                              holder, set by every exclusive grant and
--                              deleted by its clean release, so if it is
--                              still there when the lock is free, that hold
--                              ended by expiry or loss; "?<owner>" = handed
--                              to a robust acquirer with EOWNERDEAD, not yet
--                              made consistent; "!" = not recoverable until
--                              reset; "~<owner>" = handed over to that
--                              queued writer (release.lua), which may not
--                              have taken it: its grant list (KEYS[9] of
--                              that owner) tells, see handed() below.
--                              Never expires.
--   KEYS[7] <prefix>{N}:sd     zset: the readers' index of a name with many
--                              (over 16) readers: one member per shared
--                              holder field of KEYS[1], score = that
--                              holder's deadline when it was granted, so
--                              that a shared acquire or release finds
--                              whether any reader is live in O(log n)
--                              instead of reading every field.  Renewals
--                              (renew.lua) move only the field: they touch
--                              only KEYS[1], so that they go on while a
--                              cluster slot migrates; a score is thus never
--                              later than its holder's deadline, and a
--                              passed one is checked against the field
--                              (slive below).  Kept by the scripts that add
--                              or remove a shared holder (here,
--                              release.lua).  Only read while KEYS[1] is in
--                              mode 's', and checked against it by count
--                              (HLEN - 1 = ZCARD) each time: a mismatch
--                              rebuilds it from the fields (an index that
--                              expired early or was evicted, a renewal that
--                              dropped a dead field).  Its PEXPIRE is set
--                              with the hash's, to the same value, so it
--                              never outlives the leases it describes by
--                              more than a renewal's extension; every DEL
--                              of the hash deletes it, and a new shared
--                              hold never starts with one (the fast path
--                              needs it absent, the slow path deletes it).
--   KEYS[8] <prefix>{N}:rel    string "<owner>;<call>": the hold released last,
--                              kept a few seconds (release.lua): the proof a
--                              retried release looks for, and what voids a
--                              duplicate of that call's acquire that a
--                              retrying proxy might deliver after the
--                              release.
--   KEYS[9] <prefix>{N}:g:<owner>  list: the caller's grant list.  A
--                              release that hands the lock to a queued
--                              writer pushes "<call>;<token>" onto that
--                              writer's list, on which the writer waits in
--                              BLPOP (src/prim/handover.c): the pop is its grant,
--                              with no claim round trip and no pub/sub hop.
--                              "u" items say "look again" (a release that
--                              left a robust marker).  A grant item lives a
--                              day (it is the evidence handed() reads);
--                              a list of only "u" items a minute.  Each
--                              look of a queued writer empties its own
--                              list, so a grant popped after a look was
--                              pushed after that look reached the server.
--   KEYS[10] <prefix>{N}:f:<owner>  string: the caller's finished-call
--                              mark, "<call>", left by an unlock whose
--                              hold's acquire call had attempts that got no
--                              answer (release.lua), for as long as such an
--                              attempt could still arrive: a late copy of
--                              one finds a call here as new as its own and
--                              takes nothing, so the unlock need not wait
--                              for it.
--   KEYS[11] <prefix>{N}:fence the name's own counter of earlier versions
--                              (acquire.lua only): folded into KEYS[5] and
--                              deleted by the first grant that meets it, so
--                              that tokens never go back across an upgrade.
--   channel <prefix>{N}:c      "g <owner> <token>": the lock was handed to a
--                              queued writer; "u": waiting readers may enter.
--                              Published only when someone waits.
-- Owner ids are "<128-bit client id hex>:<thread number>".
-- The layout is internal and changes between versions (the queue flag in
-- 'm' is new): libraries of different versions must not use the same
-- names at the same time; an older one's release would take an 'X' hold
-- for a shared one.  Redis without persistence forgets it all anyway.
--
-- Hold identity (every request names the exact hold or attempt it is
-- about, because the network may deliver any request late, twice, or after
-- its sender gave up on it): an acquire call has a number <call>, unique
-- and increasing per owner (a thread runs one call at a time), carried in
-- its holder info and in its queue mark.  Every attempt of the call also
-- carries a server-time deadline: an attempt arriving after it grants
-- nothing and queues nothing, so once the caller has waited out its own
-- command timeout, the attempt can no longer act (src/prim/lock.c waits for
-- that before it returns).  A field of this owner with a newer call means
-- this request is stale; one with an older call is a leftover of a hold
-- the owner no longer has.  Releases and renewals name the call too
-- (release.lua, renew.lua), so a late one never touches a newer hold.
--
-- ARGV[1] owner
-- ARGV[2] "<mode><waiting><queued><robust><lease ms>;<claim ms>;<valid until>;<info>",
--         packed into one argument because each argument costs Lua setup
--         time:
--   mode    'x' | 's'
--   waiting '1' = a waiting caller: queue on failure and respect the
--           queue; '0' = try: never queue
--   queued  '1' if this caller may have queued before (its mark is removed)
--   robust  '1' for a robust acquirer
--   claim   how long a lock handed to this caller waits for its claim; 0:
--           never hand it to this caller, it takes a free lock itself
--           (Redlock: a grant on one master is not a hold, so a FIFO per
--           master could split the vote for good; its queue mark still
--           holds new readers back)
--   valid until  server time (ms) after which this attempt is void; 0: none
--   info    holder info "<count>;<pid>;<thread>;<call>;<host>"
-- Returns {1, token, dead, prev, now} when held (also when this very call
-- holds it already: a hand-over it claims now, or a grant whose reply got
-- lost); dead = 1: EOWNERDEAD, the previous exclusive hold ended without
-- unlock; prev: the robust marker (KEYS[6]) this exclusive grant replaced,
-- '' if none or not known (release.lua 'ax' puts it back if the grant is
-- undone).  A new grant with dead = 0 and prev = '' (the fast path's)
-- comes as the string "<token>;<now>" instead (src/proto/reply.c).  Or {0, hint, fence, first, now}: busy, hint = ms until the
-- holders' leases end (0 unknown), fence = the counter now (hand-overs
-- announced with a token not above it are stale), first = 1 if the caller
-- heads the writers' queue (it alone may take the lock when a lease runs
-- out unreleased, so it must look again itself).  Or {-1}: not
-- recoverable (ENOTRECOVERABLE).  Or {-2, now}: void, nothing done (the
-- attempt came after its deadline, or a newer call of this owner is here).
-- now: the server's clock (ms), from which the client dates its deadlines.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- One match for the whole packed argument (each string.sub or match is
-- interpreter work on every call).
local owner = ARGV[1]
local mode, waiting, queued, robust, lease, claim, valid, info, call =
  string.match(ARGV[2], '^(.)(.)(.)(.)(%d+);(%d+);(%d+);(%d+;%d+;%d+;(%d+);.*)$')
waiting, queued, robust = waiting == '1', queued == '1', robust == '1'
lease = tonumber(lease)
valid = tonumber(valid)
if valid > 0 and now > valid then return {-2, now} end
call = tonumber(call)
-- A call whose hold was released is over: a copy of it arriving now (a
-- proxy that retried it, say) must not take the lock again.
local rel = redis.call('GET', KEYS[8])
if rel then
  local ro, rc = string.match(rel, '^(.*);(%d+)$')
  if ro == owner and tonumber(rc) >= call then return {-2, now} end
end

local indexed = false -- this name's shares are in the readers' index (below)
local flagged = false -- the hash's mode says someone may wait (upper case)
-- Numbers become strings here with string.format('%d'): Lua's own
-- conversion (tostring, .., a number passed to redis.call) goes through
-- "%.14g", which costs several times as much.  The key's expiry is set as
-- the holder's deadline itself (PEXPIREAT): a relative PEXPIRE is
-- rewritten into an absolute one by the server on every call anyway.
local function grant(fresh, xstate, fast)
  local token = redis.call('INCR', KEYS[5])
  local dead, prev = 0, ''
  if mode == 'x' then
    if xstate then prev = xstate end
    if xstate and robust then
      -- The last exclusive hold ended without unlock (its marker is
      -- still here, the lock is free): tell this robust acquirer.
      dead = 1
      if string.sub(xstate, 1, 1) ~= '?' then xstate = '?' .. xstate end
      redis.call('SET', KEYS[6], xstate)
    else
      redis.call('SET', KEYS[6], owner)
    end
  end
  if queued then
    if mode == 'x' then
      redis.call('ZREM', KEYS[2], owner)
      redis.call('HDEL', KEYS[3], owner)
    else
      redis.call('ZREM', KEYS[4], owner)
    end
  end
  -- The mode, upper case if someone may wait (see 'm' above).  The fast
  -- path knows that no writer queues; a reader's mark left from before
  -- needs no wake-up from this holder (whoever ended the hold it waited
  -- for woke it, and a reader that finds this hold flags it itself).
  local m = mode
  if not fast and (flagged or redis.call('EXISTS', KEYS[2], KEYS[4]) > 0) then m = string.upper(mode) end
  local dl = string.format('%d', now + lease)
  redis.call('HSET', KEYS[1], 'm', m, owner, string.format('%s;%d;%s', dl, token, info))
  -- A share joining many others goes into their index (see above).
  if indexed then redis.call('ZADD', KEYS[7], dl, owner) end
  if fresh or mode == 'x' or redis.call('PTTL', KEYS[1]) < lease then
    redis.call('PEXPIREAT', KEYS[1], dl)
    if indexed then redis.call('PEXPIREAT', KEYS[7], dl) end
  end
  -- The common answer as one string: a table reply costs the server more
  -- to build and encode than the whole string.format.
  if dead == 0 and prev == '' then return string.format('%d;%d', token, now) end
  return {1, token, dead, prev, now}
end

-- Fast path, the uncontended case: nobody holds it, no writer queues, the
-- last exclusive hold ended cleanly, no readers' index is left over, no
-- finished-call mark of the caller, and no counter of an earlier version.
-- It comes before the slow path's helpers are even defined.
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[6], KEYS[7], KEYS[10], KEYS[11]) == 0 then
  return grant(true, nil, true)
end

-- This call of the caller is over: an unlock ended it while an attempt of
-- it was unanswered, and this is a late copy of that attempt.
local done = tonumber(redis.call('GET', KEYS[10]) or '')
if done and done >= call then return {-2, now} end

-- The name's own counter of an earlier version (KEYS[11]): the shared one
-- is raised to it before any grant takes a token, and it goes.
local old = redis.call('GET', KEYS[11])
if old then
  old = tonumber(old)
  if old and old > tonumber(redis.call('GET', KEYS[5]) or '0') then
    redis.call('SET', KEYS[5], string.format('%d', old))
  end
  redis.call('DEL', KEYS[11])
end

-- The readers' index (KEYS[7]) of a shared hold: one member per holder
-- field, score = that field's deadline.  A name with few holders has none
-- (reading their fields costs less than keeping it); sbuild() makes it
-- from the fields h (an HGETALL reply) once there are more than SMALL, or
-- when it no longer matches the hash by count (HLEN - 1 = ZCARD, both
-- O(1)): expired early, evicted, edited by hand.  Not the common case.
local SMALL = 16
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

local xstate = redis.call('GET', KEYS[6])
if xstate == '!' then return {-1} end

-- A hand-over's marker "~<owner>" (release.lua): the lock was handed to
-- that queued writer, which may never have taken it (killed between its
-- last look and the hand-over).  Its grant list says which: a grant still
-- in it was never popped (nor claimed by a look, which empties the list),
-- so that waiter never held the lock: a clean state, the marker goes;
-- no grant means it took the lock and the hold ended without unlock: the
-- marker becomes "<owner>", as any exclusive holder's.  Read only when
-- the marker matters (the lock free for an exclusive grant, or the
-- owner's own look) and written back, so the list is needed no longer.
-- If the list cannot be read (a Redis Cluster slot half migrated), the
-- hold is taken to have ended uncleanly: a robust acquirer is told
-- EOWNERDEAD rather than not told.  Returns the marker now (nil: clean).
local function handed(xs)
  if not xs or string.sub(xs, 1, 1) ~= '~' then return xs end
  local y = string.sub(xs, 2)
  local gk = KEYS[1] .. ':g:' .. y
  local items = redis.pcall('LRANGE', gk, 0, -1)
  local taken = true
  if not items.err then
    for _, it in ipairs(items) do
      if it ~= 'u' then taken = false break end
    end
    redis.pcall('DEL', gk)
  end
  if taken then
    redis.call('SET', KEYS[6], y)
    return y
  end
  redis.call('DEL', KEYS[6])
  return nil
end

-- Shared with many readers: the readers' index answers what the holder
-- fields would (is any live, the latest deadline) without reading them
-- all; this owner's own field is read alone.  Else (exclusive: one
-- holder; few readers; free): read the fields.
local held, mine, h = nil, nil, nil
local live, maxd = false, 0
local nz = redis.call('ZCARD', KEYS[7])
if nz == 0 then
  h = redis.call('HGETALL', KEYS[1])
  for i = 1, #h, 2 do
    if h[i] == 'm' then held = h[i + 1] elseif h[i] == owner then mine = h[i + 1] end
  end
  if held == 'X' or held == 'S' then held, flagged = string.lower(held), true end
  if held == 's' and #h / 2 - 1 > SMALL then
    sbuild(h)
    indexed = true
  end
else
  local hm = redis.call('HMGET', KEYS[1], 'm', owner)
  held, mine = hm[1], hm[2]
  if held == 'X' or held == 'S' then held, flagged = string.lower(held), true end
  if held == 's' then
    indexed = true
    if redis.call('HLEN', KEYS[1]) - 1 ~= nz then sbuild(redis.call('HGETALL', KEYS[1])) end
  else
    -- An index left from an earlier shared hold: it says nothing now.
    h = redis.call('HGETALL', KEYS[1])
  end
end
if indexed then
  local vcall = mine and tonumber(string.match(mine, '^%d+;%d+;%d+;%d+;%d+;(%d+);'))
  if vcall and vcall > call then return {-2, now} end -- a newer call holds it
  if mine then
    local d, tok = string.match(mine, '^(%d+);(%d+);')
    if vcall == call and mode == 's' and d and tonumber(d) > now then
      -- This very call holds it (a grant whose reply got lost): its lease
      -- starts again now, as below for an exclusive one.
      redis.call('HSET', KEYS[1], owner, (now + lease) .. string.match(mine, '^%d+(;.*)$'))
      redis.call('ZADD', KEYS[7], now + lease, owner)
      if redis.call('PTTL', KEYS[1]) < lease then
        redis.call('PEXPIRE', KEYS[1], lease)
        redis.call('PEXPIRE', KEYS[7], lease)
      end
      return {1, tonumber(tok), 0, '', now}
    end
    -- Expired, or a leftover of an earlier hold (see below): start afresh.
    redis.call('HDEL', KEYS[1], owner)
    redis.call('ZREM', KEYS[7], owner)
  end
  live, maxd = slive(now)
else
  for i = 1, #h, 2 do
    local f, v = h[i], h[i + 1]
    if f ~= 'm' then
      local d, tok = string.match(v, '^(%d+);(%d+);')
      d = tonumber(d)
      local vcall = f == owner and tonumber(string.match(v, '^%d+;%d+;%d+;%d+;%d+;(%d+);'))
      if f == owner and vcall and vcall > call then
        -- A newer call of this owner holds it (or was handed it): this
        -- request is a late copy of an older one.  Never touch that hold.
        return {-2, now}
      elseif d == nil or d <= now then
        redis.call('HDEL', KEYS[1], f)
      elseif f == owner then
        if vcall == call and held == mode then
          -- This very call holds it: a hand-over it claims now, or a grant
          -- whose reply got lost.  Its lease starts again now, so that the
          -- caller's estimate (from this attempt's sending) is never later
          -- than the server's deadline.  A hand-over is claimed here: it
          -- becomes a real exclusive hold, robust marker included (until
          -- then it was no hold whose owner could die inside).
          local dead = 0
          if mode == 'x' and (not xstate or xstate == '~' .. owner) then
            -- Its grant, if still in its list, is claimed by this look.
            redis.call('SET', KEYS[6], owner)
            redis.call('DEL', KEYS[9])
          elseif mode == 'x' and robust and string.sub(xstate, 1, 1) == '?' then
            dead = 1
          end
          redis.call('HSET', KEYS[1], owner, (now + lease) .. string.match(v, '^%d+(;.*)$'))
          if mode == 'x' or redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
          return {1, tonumber(tok), dead, '', now}
        end
        -- A leftover of an earlier hold of this owner, which it no longer
        -- has (lost, or its release failed): never hand it back (other mode,
        -- old token); start afresh.
        redis.call('HDEL', KEYS[1], f)
      else
        live = true
        if d > maxd then maxd = d end
      end
    end
  end
end
if not live and (held or mode == 's') then
  -- Free: what is left of the last holders goes, and so does any readers'
  -- index (a new shared generation never starts with one).
  redis.call('DEL', KEYS[1], KEYS[7])
  held, indexed, flagged = nil, false, false
end

-- Drop queued writers whose marks ran out (crashed or gone waiters).
-- A mark of this owner whose call does not parse says nothing of its call:
-- it goes, as any mark that does not parse.
local wq = redis.call('HGETALL', KEYS[3])
for i = 1, #wq, 2 do
  local d = tonumber(string.match(wq[i + 1], '^(%d+);'))
  local mc = wq[i] == owner and tonumber(string.match(wq[i + 1], '^%d+;%d+;%d+;%d+;%d+;%d+;(%d+);'))
  if d == nil or d <= now or mc == nil then
    redis.call('HDEL', KEYS[3], wq[i])
    redis.call('ZREM', KEYS[2], wq[i])
  elseif mc and mc > call then
    return {-2, now} -- a newer call of this owner queues: this one is stale
  end
end
if mode == 's' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
end

-- A waiters' key (KEYS[2], KEYS[3], KEYS[4]) lives at least as long as
-- the mark just written in it, and is never shortened (another waiter's
-- mark may have a longer lease): so the key lapses by itself once its
-- last mark has run out, and a waiter that died leaves nothing behind
-- (a key without an expiry, of an earlier version, gets one here).
local function outlive(k)
  if redis.call('PTTL', k) < lease then redis.call('PEXPIRE', k, lease) end
end

local function busy(hint)
  local first = 0
  if waiting then
    -- A mark goes in: the hash, if there is one, must say so, so that its
    -- holders' release looks for waiters (release.lua).
    if held and not flagged then
      redis.call('HSET', KEYS[1], 'm', string.upper(held))
      flagged = true
    end
    if mode == 'x' then
      -- A newcomer joins behind everyone in line, also one that came in
      -- the same millisecond (equal scores would order by owner id, i.e.
      -- at random) or before a clock step back; a queued one keeps its
      -- place.
      if not redis.call('ZSCORE', KEYS[2], owner) then
        local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
        local score = now
        if last[2] and tonumber(last[2]) >= score then score = tonumber(last[2]) + 1 end
        redis.call('ZADD', KEYS[2], score, owner)
      end
      redis.call('HSET', KEYS[3], owner, (now + lease) .. ';' .. lease .. ';' .. claim .. ';' .. info)
      outlive(KEYS[2])
      outlive(KEYS[3])
      if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == owner then first = 1 end
      -- Our grant list: a grant in it now is of a hand-over that lapsed
      -- (or of an older call); after this look, a grant is new.  A
      -- marker of ours is settled first: the list may be its evidence.
      if xstate == '~' .. owner then xstate = handed(xstate) end
      redis.call('DEL', KEYS[9])
    else
      redis.call('ZADD', KEYS[4], now + lease, owner)
      outlive(KEYS[4])
    end
  end
  return {0, hint, tonumber(redis.call('GET', KEYS[5]) or '0'), first, now}
end

if live and (mode == 'x' or held == 'x') then
  return busy(maxd - now)
end
if mode == 's' then
  -- Writer preference: a queued writer holds back new readers.
  if redis.call('ZCARD', KEYS[2]) > 0 then return busy(0) end
elseif waiting and claim ~= '0' then
  -- Free: only the head of the queue may take it (a try may barge).  A
  -- queue entry without its mark (evicted, deleted by hand) is dropped.
  -- A head that stopped re-marking itself is gone: a live waiter looks
  -- again at least every third of its lease (src/prim/lock.c), so one silent
  -- for half of it crashed, and must not hold the queue for its whole
  -- mark lease.
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  while head and head ~= owner do
    local hv = redis.call('HGET', KEYS[3], head)
    local d, l
    if hv then d, l = string.match(hv, '^(%d+);(%d+);') end
    if d and now - (tonumber(d) - tonumber(l)) <= tonumber(l) / 2 then break end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  end
  if head and head ~= owner then return busy(0) end
end
if mode == 'x' then xstate = handed(xstate) end
return grant(not live, xstate, false)
