-- status.lua: a consistent snapshot of one lock name for `rdlock --status`
-- (layout: see acquire.lua).  KEYS[1..7] as acquire.lua; the
-- holders are read from the hash itself, not the readers' index.  Read-only.
-- Returns {now_ms, mode or '', holders, writers, readers_waiting, fence,
-- xstate or ''}: holders = flat {owner, value, ...} of live holders (value
-- as stored: "<deadline>;<token>;<count>;<pid>;<thread>;<call>;<host>"); writers =
-- flat {owner, value} of live queued writers in queue order (value as
-- stored: "<mark deadline>;<lease>;<claim>;<count>;<pid>;<thread>;<call>;<host>").
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holders, mode = {}, ''
local h = redis.call('HGETALL', KEYS[1])
for i = 1, #h, 2 do
  if h[i] == 'm' then
    mode = string.lower(h[i + 1]) -- upper case: someone may wait
  else
    local d = tonumber(string.match(h[i + 1], '^(%d+);'))
    if d and d > now then
      holders[#holders + 1] = h[i]
      holders[#holders + 1] = h[i + 1]
    end
  end
end
if #holders == 0 then mode = '' end
local writers = {}
for _, w in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local v = redis.call('HGET', KEYS[3], w)
  local d = v and tonumber(string.match(v, '^(%d+);'))
  if d and d > now then
    writers[#writers + 1] = w
    writers[#writers + 1] = v
  end
end
local readers = redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf')
-- A hand-over's marker "~<owner>" reads as acquire.lua's handed() would
-- settle it, without writing: the live holder's own marker while it
-- holds; else clean if its grant is still in its list (never taken), the
-- owner's marker (ended without unlock) if not.
local x = redis.call('GET', KEYS[6]) or ''
if string.sub(x, 1, 1) == '~' then
  local y = string.sub(x, 2)
  local live = false
  for i = 1, #holders, 2 do
    if holders[i] == y then live = true end
  end
  x = y
  if not live then
    local items = redis.pcall('LRANGE', KEYS[1] .. ':g:' .. y, 0, -1)
    if not items.err then
      for _, it in ipairs(items) do
        if it ~= 'u' then x = '' break end
      end
    end
  end
end
return {now, mode, holders, writers, readers, tonumber(redis.call('GET', KEYS[5]) or '0'), x}
