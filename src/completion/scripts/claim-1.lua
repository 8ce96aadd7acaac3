--[[
  Claim a lane's head for one retry copy before it runs (docs/ARCHITECTURE.md, "The path of a retry copy"): the
  copy's (origin offset, attempt) must still be the lane's current head, else the copy is stale or duplicated and
  does nothing. A plain read of the head lets two copies of one head and attempt (written twice after a
  crash: by the committer's re-drive, or by the source path handing the head off again) run at once from two
  retry invocations; the claim makes the check and the taking one atomic step, so one record of a lane runs
  at a time.

  The claim is kept in the lane's entry, after the lease: fields 8 and 9 are the claiming copy (its own
  `topic:partition:offset`) and when the claim ends (the copy's record deadline, epoch ms). Every script that
  moves the head (advance, release) writes the entry anew, so a claim never outlives its head and attempt.
  The same copy claiming again (redelivered after its invocation died) takes its claim back; another copy
  finding the claim alive gets its end, and goes back to its tier until then.

  KEYS[1]  lanes (hash: lane id -> its entry, lib/lanes-entry.lua; this script writes fields 8 and 9, the claim)

  ARGV[1]  lane id
  ARGV[2]  expected head offset
  ARGV[3]  expected head attempt
  ARGV[4]  the claiming copy: `topic:partition:offset` of the retry copy (never contains '|')
  ARGV[5]  now (epoch ms)
  ARGV[6]  claim end (epoch ms)

  Returns
    { 0 }              claimed: run the copy
    { 1, entry }       not the head: the lane is free (entry '') or its head is another record, another attempt
                       or held; nothing changed
    { 2, untilMs }     CLAIMED: another copy of this head and attempt runs until untilMs; nothing changed
]]
-- #include lib/lanes-entry.lua

local lanesKey, lane = KEYS[1], ARGV[1]
local current = redis.call('HGET', lanesKey, lane)
if not current then return { 1, '' } end

local fields = splitEntry(current)
if fields[1] ~= ARGV[2] or fields[2] ~= ARGV[3] or fields[3] ~= 'retrying' then return { 1, current } end

local claimCopy, claimUntil = fields[8], tonumber(fields[9] or '')
if claimCopy ~= nil and claimCopy ~= '' and claimCopy ~= ARGV[4] and claimUntil ~= nil and claimUntil > tonumber(ARGV[5]) then
  return { 2, fields[9] }
end
for i = #fields + 1, 7 do fields[i] = '' end
fields[8], fields[9] = ARGV[4], ARGV[6]
redis.call('HSET', lanesKey, lane, joinEntry(fields))
return { 0 }
