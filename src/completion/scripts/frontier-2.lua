--[[
  Read a partition's frontier (the lowest offset whose done bit is not set) and optionally trim the
  bitmap below it (docs/ARCHITECTURE.md, "Redis layout"). Trimming moves base up by whole bytes below the frontier, so
  the frontier itself never changes; offsets below base are done by definition.

  KEYS[1]  bits
  KEYS[2]  meta

  ARGV[1]  trim: '1' to trim, '0' to only read

  Returns
    { 0, base, highest, frontier, trimmedBytes }  (offsets as strings)
    { 1 }                                         nothing admitted yet: no frontier
]]
local bitsKey, metaKey = KEYS[1], KEYS[2]
local meta = redis.call('HMGET', metaKey, 'base', 'highest')
local base, highest = tonumber(meta[1]), tonumber(meta[2])
if base == nil then return { 1 } end

local function fmt(x) return string.format('%.0f', x) end

local f = base + redis.call('BITPOS', bitsKey, 0)
if f > highest + 1 then f = highest + 1 end

local trimmedBytes = 0
if ARGV[1] == '1' then
  trimmedBytes = math.floor((f - base) / 8)
  if trimmedBytes > 0 then
    -- Up to highest's byte only: zero bytes reserved past it (admit-3.lua, mark-2.lua) go too.
    local rest = redis.call('GETRANGE', bitsKey, trimmedBytes, math.floor((highest - base) / 8))
    if rest == '' then redis.call('DEL', bitsKey) else redis.call('SET', bitsKey, rest) end
    base = base + trimmedBytes * 8
    redis.call('HSET', metaKey, 'base', fmt(base))
  end
end
return { 0, fmt(base), fmt(highest), fmt(f), trimmedBytes }
