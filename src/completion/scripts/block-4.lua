--[[
  Block a lane: make a record the head of its lane in the retry path, and park the lane's later records
  of the same batch (docs/ARCHITECTURE.md, "The path of a record"). Called by the source path BEFORE the head is
  written to the retry topic, so the retry function always finds the head it is given; the head's own
  done bit is set by a later mark, after the retry write is acknowledged (G3). Parked records get their
  done bits here, in the same atomic step as the park write.

  Blocking again with the same head is a no-op for the head (a redelivered head being handed off again).

  KEYS[1]  bits
  KEYS[2]  meta
  KEYS[3]  lanes (hash: lane id -> its entry, lib/lanes-entry.lua)
  KEYS[4]  park list of the lane

  ARGV[1]  epoch: lower than the stored epoch -> STALE_EPOCH, higher -> stored
  ARGV[2]  lane id
  ARGV[3]  head offset
  ARGV[4]  head attempt (the attempt number its retry record carries)
  ARGV[5]  state: 'retrying' or 'held'
  ARGV[6]  now (epoch ms)
  ARGV[7]  due time of the head's retry copy (epoch ms); for a held head, when it was dead-lettered
  ARGV[8]  dead-letter reason of a held head ('' for a retrying one; never contains '|')
  ARGV[9..] pairs: offset, payload of each record to park, ascending offsets, all above the head

  Returns
    { 0, parked }  lane blocked, `parked` records parked
    { -1 }         STALE_EPOCH: nothing changed
    { -2, offset } NOT_ADMITTED: an offset above highest; nothing changed
    { -3, head }   LANE_CONFLICT: the lane is blocked on another head; nothing changed
]]
-- #include lib/lanes-entry.lua

local bitsKey, metaKey, lanesKey, parkKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local epoch = tonumber(ARGV[1])
local lane, headOffset = ARGV[2], tonumber(ARGV[3])

local function fmt(x) return string.format('%.0f', x) end

local meta = redis.call('HMGET', metaKey, 'base', 'highest', 'epoch')
local storedEpoch = tonumber(meta[3]) or 0
if epoch < storedEpoch then return { -1 } end
local base, highest = tonumber(meta[1]), tonumber(meta[2])
if base == nil or headOffset > highest then return { -2, ARGV[3] } end
for i = 9, #ARGV, 2 do
  if tonumber(ARGV[i]) > highest then return { -2, ARGV[i] } end
end
local current = redis.call('HGET', lanesKey, lane)
if current then
  local currentHead = entryHead(current)
  if tonumber(currentHead) ~= headOffset then return { -3, currentHead } end
end
if epoch > storedEpoch then redis.call('HSET', metaKey, 'epoch', fmt(epoch)) end

if not current then
  redis.call('HSET', lanesKey, lane, joinEntry({ fmt(headOffset), ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8] }))
  redis.call('HINCRBY', metaKey, 'blockedTotal', 1)
end
-- No cap here: these records were admitted already; the caps act at admission (back-pressure).
local parked, bytes = 0, 0
for i = 9, #ARGV, 2 do
  local o = tonumber(ARGV[i])
  -- A record already done (parked by an earlier, interrupted call) is not parked twice.
  if o >= base and redis.call('GETBIT', bitsKey, o - base) == 0 then
    redis.call('RPUSH', parkKey, ARGV[i] .. ':' .. ARGV[i + 1])
    redis.call('SETBIT', bitsKey, o - base, 1)
    parked = parked + 1
    bytes = bytes + #ARGV[i + 1]
  end
end
if parked > 0 then
  redis.call('HINCRBY', metaKey, 'parked', parked)
  redis.call('HINCRBY', metaKey, 'parkedBytes', bytes)
  redis.call('HINCRBY', metaKey, 'parkedTotal', parked)
end
return { 0, parked }
