--[[
  Advance a blocked lane's head in the retry path (docs/ARCHITECTURE.md, "The path of a retry copy"): give it its next
  attempt and due time after a failed run, hold it after a dead letter (`hold` policy), or take a lease off
  it once its retry copy is written. The expected (offset, attempt) makes a stale or duplicated caller a
  no-op: only the caller that ran the lane's current head can move it.

  The lease: while a head's retry copy may not exist yet (it is being written, or the head is run inline
  by the retry function that released the lane onto it), its entry carries a lease expiry; a committer run
  finding the lease expired writes the copy from the payload kept first in the park list. So the payload
  given here is kept first in the lane's park list (once) whenever a lease is set: a crash between this
  call and the copy's write then loses nothing.

  KEYS[1]  meta   (hash: parked, parkedBytes, counters)
  KEYS[2]  lanes (hash: lane id -> its entry, lib/lanes-entry.lua)
  KEYS[3]  park list of the lane

  ARGV[1]  lane id
  ARGV[2]  expected head offset
  ARGV[3]  expected head attempt
  ARGV[4]  new attempt
  ARGV[5]  new state: 'retrying' or 'held'
  ARGV[6]  due time of the head's next copy (epoch ms); for a held head, when it was dead-lettered
  ARGV[7]  lease expiry (epoch ms); '0': no lease (the head's copy is durable, or it is held)
  ARGV[8]  reason of a held head ('' for a retrying one; never contains '|')
  ARGV[9]  payload of the head, kept first in its park list when not there yet ('' = not sent)

  Returns
    { 0 }               the head was advanced
    { -4, head }        NOT_HEAD: the lane's head is another record, or the lane is free (head ''); nothing changed
    { -5, attempt }     STALE_ATTEMPT: the head is at another attempt (a stale copy); nothing changed
]]
-- #include lib/lanes-entry.lua

local metaKey, lanesKey, parkKey = KEYS[1], KEYS[2], KEYS[3]
local lane = ARGV[1]
local current = redis.call('HGET', lanesKey, lane)
if not current then return { -4, '' } end
local fields = splitEntry(current)
local headOffset, attempt, since = fields[1], fields[2], fields[4]
if headOffset ~= ARGV[2] then return { -4, headOffset } end
if attempt ~= ARGV[3] then return { -5, attempt } end

local payload = ARGV[9]
if payload ~= '' then
  local first = redis.call('LINDEX', parkKey, 0)
  local firstOffset = first and string.sub(first, 1, string.find(first, ':', 1, true) - 1)
  if firstOffset ~= headOffset then
    redis.call('LPUSH', parkKey, headOffset .. ':' .. payload)
    redis.call('HINCRBY', metaKey, 'parked', 1)
    redis.call('HINCRBY', metaKey, 'parkedBytes', #payload)
  end
end

local entry = { headOffset, ARGV[4], ARGV[5], since, ARGV[6], ARGV[8] }
if ARGV[7] ~= '0' then entry[7] = ARGV[7] end
redis.call('HSET', lanesKey, lane, joinEntry(entry))
if ARGV[5] == 'held' then redis.call('HINCRBY', metaKey, 'heldTotal', 1) end
return { 0 }
