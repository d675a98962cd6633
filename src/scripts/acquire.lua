-- acquire.lua: take one lock name in exclusive ('x') or shared ('s') mode.
--
-- Key layout of one lock name N (all keys share the hash tag {N}, so Redis
-- Cluster keeps them in one slot; written down here once for both modes):
--   KEYS[1] <prefix>{N}        hash: field 'm' = 'x' | 's' (mode), and one
--                              field per holder: owner id ->
--                              "<deadline ms>;<token>;<count>;<pid>;<tid>;<host>"
--                              deadline is server time (TIME); the key's own
--                              PEXPIRE covers the longest live holder, so a
--                              dead sole holder's lock vanishes by itself.
--   KEYS[2] <prefix>{N}:w      zset: waiting exclusive callers (writers),
--                              score = mark deadline (server ms).  Live marks
--                              hold back new readers (writer preference) and
--                              new exclusive callers that did not queue.
--   KEYS[3] <prefix>{N}:r      zset: waiting shared callers, for wake-ups only.
--   KEYS[4] <prefix>{N}:fence  the fencing counter; never expired or deleted.
--   channel <prefix>{N}:c      release notifications ("u"), published only
--                              when someone waits.
-- Owner ids are "<128-bit client id hex>:<thread number>".
--
-- ARGV[1] owner  ARGV[2] mode 'x'|'s'  ARGV[3] lease ms
-- ARGV[4] '1' = a waiting caller: queue on failure and respect the queue;
--         '0' = try: never queue
-- ARGV[5] holder info "<count>;<pid>;<tid>;<host>"
-- ARGV[6] '1' if this caller may have queued before (its mark is removed)
-- Returns {1, token} when held (also when this owner already held it, so a
-- retried call after a lost reply is harmless), or {0, hint}: busy, hint =
-- ms until the current holders' leases end (0 = unknown).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner, mode, lease, waiting = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'

local function grant(fresh)
  local token = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[1], 'm', mode, owner, (now + lease) .. ';' .. token .. ';' .. ARGV[5])
  if fresh or mode == 'x' or redis.call('PTTL', KEYS[1]) < lease then
    redis.call('PEXPIRE', KEYS[1], lease)
  end
  if ARGV[6] == '1' then
    redis.call('ZREM', mode == 'x' and KEYS[2] or KEYS[3], owner)
  end
  return {1, token}
end

-- Fast path, the uncontended case: nobody holds it and no writer queues.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return grant(true)
end

local h = redis.call('HGETALL', KEYS[1])
local held, live, maxd = nil, 0, 0
for i = 1, #h, 2 do
  local f, v = h[i], h[i + 1]
  if f == 'm' then
    held = v
  else
    local d, tok = string.match(v, '^(%d+);(%d+);')
    d = tonumber(d)
    if d == nil or d <= now then
      redis.call('HDEL', KEYS[1], f)
    else
      live = live + 1
      if d > maxd then maxd = d end
      if f == owner then
        return {1, tonumber(tok)}
      end
    end
  end
end
if live == 0 and held then
  redis.call('DEL', KEYS[1])
  held = nil
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local queue = KEYS[2]
if mode == 's' then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  queue = KEYS[3]
end

local function busy(hint)
  if waiting then
    redis.call('ZADD', queue, now + lease, owner)
  end
  return {0, hint}
end

if live > 0 and (mode == 'x' or held == 'x') then
  return busy(maxd - now)
end
local writers = redis.call('ZCARD', KEYS[2])
if mode == 's' then
  -- Writer preference: a queued writer holds back new readers.
  if writers > 0 then return busy(0) end
elseif waiting and writers > 0 and not redis.call('ZSCORE', KEYS[2], owner) then
  -- Free, but others queued first: a waiting caller that did not queue yet
  -- goes behind them, so a releaser cannot grab it straight back.
  return busy(0)
end
return grant(live == 0)
