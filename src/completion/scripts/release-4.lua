--[[
  Release a lane whose head has become terminal (docs/ARCHITECTURE.md, "The path of a retry copy"): set the head's
  done bit, and make the lane's next parked record its new head, or free the lane when nothing is parked.
  Anyone may release a lane (docs/ARCHITECTURE.md, "Redis layout"); the expected head makes a duplicated release a no-op.

  The released head's done bit is set here, atomically with the release: were it left to a later flush
  that failed, a redelivery would find the lane free and the bit clear, and run the record again.

  A parked record stays first in its park list while it is the head, and leaves the list only when the
  lane is released past it: until its run or retry copy is durable, Redis holds its only copy outside its source
  topic (its done bit is set since it was parked, so the event source will never deliver it again; the committer
  never commits the completion group past a lane head, so Kafka still holds it for a recovery).

  KEYS[1]  bits
  KEYS[2]  meta
  KEYS[3]  lanes (hash: lane id -> its entry, lib/lanes-entry.lua)
  KEYS[4]  park list of the lane

  ARGV[1]  lane id
  ARGV[2]  expected head offset
  ARGV[3]  attempt of the new head (the attempt number its run or retry record will carry)
  ARGV[4]  now (epoch ms): also the new head's due time
  ARGV[5]  lease expiry of the new head (epoch ms; '0' or absent: none). The retry function releasing a
           lane runs the new head inline: until that head is terminal or its retry copy is written, Redis
           holds its only copy, and the lease tells a committer run when to write that copy (re-drive).
  ARGV[6]  the caller's hold on the head ('' or absent: none, anyone may release): `lease:<ms>`, the lease a
           drained head was given (field 7), or `claim:<copy>`, the claim of the copy that ran it (field 8). A
           head whose entry no longer carries it was written anew by someone else (a recovery rebuilt the lane, a
           re-drive took the lease off, a twin took the claim over): NOT_HEAD, so a run that started before a
           recovery never takes a lease on the rebuilt lane (the recovery's own copy runs the head again).

  Returns
    { 0 }                          lane freed: nothing else was parked
    { 1, offset, payload }         the next parked record, now the lane's head (state 'retrying')
    { -4, head }                   NOT_HEAD: the lane's head is another record, or the lane is free
                                   (head is '' then); nothing changed
]]
-- #include lib/lanes-entry.lua

local bitsKey, metaKey, lanesKey, parkKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lane = ARGV[1]
local current = redis.call('HGET', lanesKey, lane)
if not current then return { -4, '' } end
local currentHead = entryHead(current)
if currentHead ~= ARGV[2] then return { -4, currentHead } end
local hold = ARGV[6]
if hold ~= nil and hold ~= '' then
  local fields = splitEntry(current)
  local kind, value = string.match(hold, '^(%a+):(.*)$')
  local held = (kind == 'lease' and fields[7] == value) or (kind == 'claim' and fields[8] == value)
  if not held then return { -4, currentHead } end
end

local base = tonumber(redis.call('HGET', metaKey, 'base'))
local headOffset = tonumber(currentHead)
if base ~= nil and headOffset >= base then redis.call('SETBIT', bitsKey, headOffset - base, 1) end

local function parsed(entry)
  local sep = string.find(entry, ':', 1, true)
  return string.sub(entry, 1, sep - 1), string.sub(entry, sep + 1)
end

-- The terminal head leaves the park list if it came from it.
local first = redis.call('LINDEX', parkKey, 0)
if first then
  local offset, payload = parsed(first)
  if offset == currentHead then
    redis.call('LPOP', parkKey)
    redis.call('HINCRBY', metaKey, 'parked', -1)
    redis.call('HINCRBY', metaKey, 'parkedBytes', -#payload)
    first = redis.call('LINDEX', parkKey, 0)
  end
end
if not first then
  -- Counted, so that an audit can tell a lanes hash that lost entries (blockedTotal - freedTotal = lanes).
  redis.call('HINCRBY', metaKey, 'freedTotal', 1)
  redis.call('HDEL', lanesKey, lane)
  return { 0 }
end
local offset, payload = parsed(first)
local entry = { offset, ARGV[3], 'retrying', ARGV[4], ARGV[4], '' }
if ARGV[5] ~= nil and ARGV[5] ~= '0' and ARGV[5] ~= '' then entry[7] = ARGV[5] end
redis.call('HSET', lanesKey, lane, joinEntry(entry))
return { 1, offset, payload }
