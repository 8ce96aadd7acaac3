--[[
  Set the done bits of a batch of offsets of one partition (docs/ARCHITECTURE.md, "The path of a record").
  Offsets below base are done by definition and ignored. An offset above the highest delivered offset
  was never admitted: the call changes nothing and says so (marking it would let the frontier pass
  offsets that were never delivered).

  KEYS[1]  bits
  KEYS[2]  meta
  KEYS[3..] step blocks (hashes: "<offset>:<step name>" -> result) of records of the partition now terminal: their
            fields are deleted once the bits are set, in the same call (a redelivery of a record whose bit is not
            stored still finds them)

  ARGV[1]  epoch: lower than the stored epoch -> STALE_EPOCH, higher -> stored
  ARGV[2]  the offsets, ascending, as one string: the first, then each one's distance from the one before,
           separated by spaces ("41 1 1 5"; a distance of 0 repeats an offset)
  ARGV[3]  how many fields to delete from each of KEYS[3..], space-separated ("2 1")
  ARGV[4..]  those fields, block after block

  Returns
    { 0, newlySet }  done bits set (newlySet: how many were not set before)
    { -1 }           STALE_EPOCH: nothing changed
    { -2, offset }   NOT_ADMITTED: an offset above highest (or nothing admitted yet); nothing changed
]]
local bitsKey, metaKey = KEYS[1], KEYS[2]
local epoch = tonumber(ARGV[1])
local meta = redis.call('HMGET', metaKey, 'base', 'highest', 'epoch')
local storedEpoch = tonumber(meta[3]) or 0
if epoch < storedEpoch then return { -1 } end

local offsets, count, o = {}, 0, 0
for d in string.gmatch(ARGV[2] or '', '%d+') do
  count = count + 1
  if count == 1 then o = tonumber(d) else o = o + tonumber(d) end
  offsets[count] = o
end

local base, highest = tonumber(meta[1]), tonumber(meta[2])
-- Ascending: the last offset is the highest.
if count > 0 and (base == nil or offsets[count] > highest) then
  for i = 1, count do
    if base == nil or offsets[i] > highest then return { -2, string.format('%.0f', offsets[i]) } end
  end
end
if epoch > storedEpoch then redis.call('HSET', metaKey, 'epoch', string.format('%.0f', epoch)) end

-- cover(bitsKey, bit): grows the bitmap to hold a bit.
-- #include lib/cover.lua
if count > 0 and offsets[count] >= base then cover(bitsKey, offsets[count] - base) end

-- Runs of consecutive offsets (a finished batch is mostly one) are set a whole byte at a time, and counted
-- with BITCOUNT before and after; short runs and scattered offsets together by setBits.
-- #include lib/set-run.lua
-- #include lib/set-bits.lua

local newlySet = 0
local scattered, n = {}, 0
local i = 1
while i <= count do
  if offsets[i] < base then
    i = i + 1
  else
    local j = i
    while j < count and offsets[j + 1] <= offsets[j] + 1 do j = j + 1 end
    local a, b = offsets[i] - base, offsets[j] - base
    if b - a >= 64 then
      local before = redis.call('BITCOUNT', bitsKey, math.floor(a / 8), math.floor(b / 8))
      setRun(bitsKey, a, b)
      newlySet = newlySet + redis.call('BITCOUNT', bitsKey, math.floor(a / 8), math.floor(b / 8)) - before
    else
      for k = i, j do
        n = n + 1
        scattered[n] = offsets[k] - base
      end
    end
    i = j + 1
  end
end
if n > 0 then newlySet = newlySet + setBits(bitsKey, scattered, 1, n) end
local counts = {}
if #KEYS > 2 then for c in string.gmatch(ARGV[3], '%d+') do counts[#counts + 1] = tonumber(c) end end
local at = 4
for b = 3, #KEYS do
  local last = at + counts[b - 2] - 1
  -- In slices: unpack passes its values on Lua's stack, which holds some thousands.
  for from = at, last, 1000 do redis.call('HDEL', KEYS[b], unpack(ARGV, from, math.min(from + 999, last))) end
  at = last + 1
end
return { 0, newlySet }
