--[[
  Admit a delivered batch of one partition (docs/ARCHITECTURE.md, "The path of a record" and "Redis layout").

  For each record, in ascending offset order: bridge the gap from the highest delivered offset (offsets
  never delivered between two delivered ones are done), skip records that are done (G7), park records of
  blocked lanes (payload appended to the lane's park list, done bit set: G3 holds because the park write
  and the bit are one atomic step), and refuse records beyond the window or parked caps (back-pressure:
  the record is left untouched so the event source redelivers it later).

  Payloads are needed only for records of blocked lanes, which are rare: a caller may send '' as a
  record's payload. If a record of a blocked lane (other than the lane's head) came without one, the call
  changes nothing and returns code 2 with the ids of those lanes; the caller calls again with their
  payloads. So the common call carries no payloads, and parking stays atomic with the lane check.

  KEYS[1]      bits   (string bitmap: bit i = done bit of offset base + i)
  KEYS[2]      meta   (hash: base, highest, epoch, parked, parkedBytes, admitted, duplicates, refused,
                       recovering: the recovery fence, epoch ms; see rebuild-fence-1.lua;
                       born: the first offset the state admitted when this call made it, never moved by trimming:
                       a retry copy whose origin lies below it was admitted by an earlier state, see loss-suspect.ts)
  KEYS[3]      lanes (hash: lane id -> its entry, lib/lanes-entry.lua)
  KEYS[3 + p]  park list of the p-th lane sent with payloads (p = 1..), same hash tag: only those lanes can park

  ARGV[1]  epoch: integer; lower than the stored epoch -> STALE_EPOCH, higher -> stored
  ARGV[2]  maxWindow: records at or beyond frontier + maxWindow are refused
  ARGV[3]  maxParked: parked records of the partition (all lanes) may not exceed this
  ARGV[4]  maxParkedBytes: bytes of parked payloads of the partition may not exceed this
  ARGV[5]  n: number of records
  ARGV[6]  m: number of lanes
  ARGV[7 .. 6+m]  lane ids
  ARGV[7+m]       the n offsets, ascending, as one string: the first, then each one's distance from the one
                  before, separated by spaces ("41 1 1 5"): one argument for a whole batch, not n
  ARGV[8+m]       the n lane indexes j (0 = independent record), space-separated ("1 0 2")
  ARGV[9+m]       the lanes j whose park lists KEYS[3 + p] are, in that order, space-separated ("2 5"; '' for none)
  ARGV[10+m ..]   pairs: record index k (0-based), payload to park; only for records that carry one

  Returns
    { code, statuses, base, highest, frontier, handoffHeads, seenUpTo }
    code  0  every record admitted
          1  some records refused (back-pressure)
         -1  STALE_EPOCH: nothing changed
    While a recovery rebuilds the partition (its fence in meta, not expired), every record is refused (code
    1): none may run ahead of the records the recovery finds again in Kafka.
    { 2, laneIds }  PAYLOADS_NEEDED: records of these blocked lanes came without payloads; nothing changed
    statuses: one character per record: r run, d duplicate, p parked, c refused (cap), h handoff
      (d also for a record below its blocked lane's head: it finished before the head started)
      (h: the record is the head of its own blocked lane and not done, so its earlier hand-off may not
       have completed: hand it off again as its head entry in handoffHeads says, in record order)
    A record refused at a cap refuses the later records of its lane in the call, so a lane's records are
    never parked out of order.
    base, highest, frontier: after the call, as strings
    seenUpTo: the highest offset admitted before this call ('' when the call made the state): a record above it
      was never admitted by this state, so it cannot have run since (durable steps need not be read for it)
]]
-- #include lib/lanes-entry.lua

local bitsKey, metaKey, lanesKey = KEYS[1], KEYS[2], KEYS[3]
local epoch = tonumber(ARGV[1])
local maxWindow = tonumber(ARGV[2])
local maxParked = tonumber(ARGV[3])
local maxParkedBytes = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local m = tonumber(ARGV[6])

local function fmt(x) return string.format('%.0f', x) end

local meta = redis.call('HMGET', metaKey, 'base', 'highest', 'epoch', 'parked', 'parkedBytes', 'recovering')
local storedEpoch = tonumber(meta[3]) or 0
if epoch < storedEpoch then return { -1 } end
if meta[6] then
  local time = redis.call('TIME')
  if tonumber(meta[6]) > tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) then
    return { 1, string.rep('c', n), '', '', '', {} }
  end
end
local first = 7 + m

-- The batch, read once: offsets (from their distances), lane indexes and the payloads sent.
local offsets, laneOf, payloads = {}, {}, {}
local count, o = 0, 0
for d in string.gmatch(ARGV[first], '%d+') do
  count = count + 1
  if count == 1 then o = tonumber(d) else o = o + tonumber(d) end
  offsets[count] = o
end
count = 0
for j in string.gmatch(ARGV[first + 1], '%d+') do
  count = count + 1
  laneOf[count] = tonumber(j)
end
local parkKeyOf = {}
count = 0
for j in string.gmatch(ARGV[first + 2], '%d+') do
  count = count + 1
  parkKeyOf[tonumber(j)] = KEYS[3 + count]
end
for i = first + 3, #ARGV - 1, 2 do payloads[tonumber(ARGV[i]) + 1] = ARGV[i + 1] end

-- The head of each blocked lane of the batch (false: the lane is free), read before anything changes.
-- Mostly no lane of the partition is blocked: then its lanes hash does not exist, and none is read.
local heads = {}
if m > 0 and redis.call('EXISTS', lanesKey) == 1 then
  for s = 1, m, 1000 do
    local got = redis.call('HMGET', lanesKey, unpack(ARGV, 6 + s, 6 + math.min(s + 999, m)))
    for t = 1, #got do heads[s + t - 1] = got[t] end
  end
end
local needed, neededIds = {}, {}
for k = 1, n do
  local j = laneOf[k]
  if j > 0 and heads[j] and not needed[j] and (payloads[k] == nil or parkKeyOf[j] == nil) then
    -- Only records above the head can be parked.
    if offsets[k] > tonumber(entryHead(heads[j])) then
      needed[j] = true
      neededIds[#neededIds + 1] = ARGV[6 + j]
    end
  end
end
if #neededIds > 0 then return { 2, neededIds } end
if epoch > storedEpoch then redis.call('HSET', metaKey, 'epoch', fmt(epoch)) end

local base = tonumber(meta[1])
local highest = tonumber(meta[2])
local seenUpTo = ''
if base ~= nil then seenUpTo = fmt(highest) end
local parked = tonumber(meta[4]) or 0
local parkedBytes = tonumber(meta[5]) or 0
if base == nil then
  if n == 0 then return { 0, '', '', '', '', {} } end
  base = offsets[1]
  highest = base - 1
  redis.call('HSETNX', metaKey, 'born', fmt(base))
end

-- Frontier: first clear bit, never beyond highest + 1 (offsets never delivered are not done).
local function frontier()
  local pos = redis.call('BITPOS', bitsKey, 0)
  local f = base + pos
  if f > highest + 1 then f = highest + 1 end
  return f
end

-- cover(bitsKey, bit): grows the bitmap to hold a bit.
-- #include lib/cover.lua

local statuses = {}
local handoffHeads = {}
local laneRefused = {}
local admitted, duplicates, refused, newlyParked = 0, 0, 0, 0
local f = frontier()

local function setBit(bit)
  cover(bitsKey, bit)
  redis.call('SETBIT', bitsKey, bit, 1)
end

-- setRun(bitsKey, a, b): sets bits a..b, whole bytes at a time.
-- #include lib/set-run.lua

-- Set bits [fromOffset, toOffset] (all above the old highest, so all clear).
local function setRange(fromOffset, toOffset)
  cover(bitsKey, toOffset - base)
  setRun(bitsKey, fromOffset - base, toOffset - base)
end

for k = 1, n do
  local o = offsets[k]
  local laneIndex = laneOf[k]
  local payload = payloads[k] or ''
  local status
  if o < base then
    status = 'd'
  elseif o <= highest then
    if redis.call('GETBIT', bitsKey, o - base) == 1 then status = 'd' end
  elseif f == highest + 1 then
    -- Everything delivered so far is done: start the bitmap afresh at o instead of bridging the gap,
    -- which keeps sparse offsets (compacted topics, offset 10^12) cheap and the window at one record.
    redis.call('DEL', bitsKey)
    base = o
    f = o
    highest = o
  elseif o >= f + maxWindow then
    status = 'c'
  else
    if o > highest + 1 then setRange(highest + 1, o - 1) end
    highest = o
  end

  if status == nil and laneIndex > 0 and laneRefused[laneIndex] then status = 'c' end
  if status == nil then
    if laneIndex > 0 then
      local head = heads[laneIndex]
      if head then
        local headOffset = tonumber(string.match(head, '^(%d+)|'))
        if headOffset == o then
          status = 'h'
          handoffHeads[#handoffHeads + 1] = head
        elseif o < headOffset then
          -- Below its lane's head, so it finished before the head started (a lane runs in order); its done
          -- bit was lost (a failed flush). Record it as done: parking it would put it behind later records.
          setBit(o - base)
          status = 'd'
        elseif parked >= maxParked or parkedBytes + #payload > maxParkedBytes then
          status = 'c'
        else
          redis.call('RPUSH', parkKeyOf[laneIndex], fmt(o) .. ':' .. payload)
          parkedBytes = parkedBytes + #payload
          setBit(o - base)
          parked = parked + 1
          newlyParked = newlyParked + 1
          status = 'p'
        end
      end
    end
    if status == nil then status = 'r' end
  end

  if status == 'd' then duplicates = duplicates + 1
  elseif status == 'c' then
    refused = refused + 1
    if laneIndex > 0 then laneRefused[laneIndex] = true end
  else admitted = admitted + 1 end
  statuses[#statuses + 1] = status
end

redis.call('HSET', metaKey, 'base', fmt(base), 'highest', fmt(highest), 'parked', fmt(parked), 'parkedBytes', fmt(parkedBytes))
if admitted > 0 then redis.call('HINCRBY', metaKey, 'admitted', admitted) end
if duplicates > 0 then redis.call('HINCRBY', metaKey, 'duplicates', duplicates) end
if refused > 0 then redis.call('HINCRBY', metaKey, 'refused', refused) end
if newlyParked > 0 then redis.call('HINCRBY', metaKey, 'parkedTotal', newlyParked) end

local code = 0
if refused > 0 then code = 1 end
-- Trim here too, not only in the committer: the bitmap stays bounded even when no committer runs.
f = frontier()
local trimBytes = math.floor((f - base) / 8)
if trimBytes >= 8192 then
  -- Up to highest's byte only: the zero bytes cover() reserved past it go too.
  local rest = redis.call('GETRANGE', bitsKey, trimBytes, math.floor((highest - base) / 8))
  if rest == '' then redis.call('DEL', bitsKey) else redis.call('SET', bitsKey, rest) end
  base = base + trimBytes * 8
  redis.call('HSET', metaKey, 'base', fmt(base))
end
return { code, table.concat(statuses), fmt(base), fmt(highest), fmt(f), handoffHeads, seenUpTo }
