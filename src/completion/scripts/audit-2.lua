--[[
  Audit a partition's completion state for signs that Redis lost part of it (docs/durability.md, "How a loss is found"). Read only.

  Redis keeps two counts of what it holds beside the data itself: `parked` (records in the park lists) and
  `blockedTotal - freedTotal` (lanes in the lanes hash). A key lost on its own (a park list, the lanes hash)
  or a suffix of writes lost leaves the counts and the data disagreeing; a lost `meta` shows as no `base`.
  The lowest head of a blocked lane bounds what the durable completion group may commit: parked records and
  heads are not terminal, so the committer never commits past them.

  KEYS[1]      meta   (hash: base, highest, gen, parked, blockedTotal, freedTotal, recovering, recoveries, lossReported,
                       born, lossReportedFrom, marked)
  KEYS[2]      lanes (hash: lane id -> its entry, lib/lanes-entry.lua)
  KEYS[2 + j]  park list of the j-th lane named in ARGV (j = 1..m), same hash tag

  ARGV[1 .. m]  the lane ids whose park lists are given, as HKEYS read them just before

  Returns (every value a string, '' when absent)
    { base, highest, gen, parked, parkedSum, lanes, openLanes, lowestHead, recovering, recoveries, unlisted, lossReported,
      oldestDue, born, lossReportedFrom, marked }
    parkedSum: the lengths of the given park lists added up
    lanes: entries in the lanes hash; openLanes: blockedTotal - freedTotal
    lowestHead: the lowest head offset of a blocked lane ('' when none)
    unlisted: lanes in the hash whose park list was not given (the caller reads again)
    lossReported: when a retry copy reported the partition's state lost (epoch ms; see report-loss-1.lua)
    oldestDue: the earliest due time of a retrying head without a lease ('' when none): a head long overdue had its
      copy run while the run's writes were lost
    born: the first offset the state admitted (or the one a recovery vouched for); lossReportedFrom: the lowest origin
      a retry copy reported lost (see report-loss-1.lua); marked: the generation the completion group's marker is
      known to name (see set-marked-1.lua)
]]
-- #include lib/lanes-entry.lua

local metaKey, lanesKey = KEYS[1], KEYS[2]
local meta = redis.call('HMGET', metaKey, 'base', 'highest', 'gen', 'parked', 'blockedTotal', 'freedTotal', 'recovering', 'recoveries', 'lossReported', 'born', 'lossReportedFrom', 'marked')

local given = {}
local parkedSum = 0
for j = 1, #ARGV do
  given[ARGV[j]] = true
  parkedSum = parkedSum + redis.call('LLEN', KEYS[2 + j])
end

local entries = redis.call('HGETALL', lanesKey)
local lowest, count, unlisted, oldestDue = nil, 0, 0, nil
for i = 1, #entries, 2 do
  count = count + 1
  if not given[entries[i]] then unlisted = unlisted + 1 end
  local fields = splitEntry(entries[i + 1])
  local head = tonumber(fields[1])
  if head ~= nil and (lowest == nil or head < lowest) then lowest = head end
  local due, lease = tonumber(fields[5]), tonumber(fields[7] or '') or 0
  if fields[3] == 'retrying' and lease <= 0 and due ~= nil and (oldestDue == nil or due < oldestDue) then oldestDue = due end
end

local function str(x) if x == nil or x == false then return '' end return tostring(x) end
local function fmt(x) if x == nil then return '' end return string.format('%.0f', x) end
local open = (tonumber(meta[5]) or 0) - (tonumber(meta[6]) or 0)
return {
  str(meta[1]), str(meta[2]), str(meta[3]), str(meta[4]), fmt(parkedSum), fmt(count), fmt(open), fmt(lowest),
  str(meta[7]), str(meta[8]), fmt(unlisted), str(meta[9]), fmt(oldestDue), str(meta[10]), str(meta[11]), str(meta[12]),
}
