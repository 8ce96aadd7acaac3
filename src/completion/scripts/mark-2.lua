--[[
  Set the done bits of a batch of offsets of one partition (DESIGN.md section 4 step 5).
  Offsets below base are done by definition and ignored. An offset above the highest delivered offset
  was never admitted: the call changes nothing and says so (marking it would let the frontier pass
  offsets that were never delivered).

  KEYS[1]  bits
  KEYS[2]  meta

  ARGV[1]  epoch: lower than the stored epoch -> STALE_EPOCH, higher -> stored
  ARGV[2..] offsets

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

local base, highest = tonumber(meta[1]), tonumber(meta[2])
for i = 2, #ARGV do
  local o = tonumber(ARGV[i])
  if base == nil or o > highest then return { -2, ARGV[i] } end
end
if epoch > storedEpoch then redis.call('HSET', metaKey, 'epoch', string.format('%.0f', epoch)) end

local newlySet = 0
for i = 2, #ARGV do
  local o = tonumber(ARGV[i])
  if o >= base and redis.call('SETBIT', bitsKey, o - base, 1) == 0 then newlySet = newlySet + 1 end
end
return { 0, newlySet }
