--[[
  A recovery's rebuild of a partition, third step (after rebuild-begin-3, once per chunk of the records read again
  from Kafka, in offset order): the first record of a lane becomes its head (attempt 1, due now, a lease already
  expired, its payload first in its park list: the recovery or the committer's re-drive writes its retry copy), the
  lane's later records are parked behind it. Every offset of the chunk's range gets its done bit (gaps included)
  except the independent records, which the caller hands off itself and marks done after the write.

  One script for the heads, the park lists, the done bits and the counts of a chunk: `audit-2` checks the counts
  against the lists, so a chunk half written would read as a loss of its own.

  KEYS[1]      bits
  KEYS[2]      meta
  KEYS[3]      lanes
  KEYS[3 + j]  park list of the j-th lane named in ARGV (j = 1..m)

  ARGV[1]          now (epoch ms)
  ARGV[2]          from: the first offset of the chunk's range
  ARGV[3]          to: its last offset
  ARGV[4]          m: number of lanes
  ARGV[5 .. 4+m]   lane ids, the j-th matching KEYS[3 + j]
  ARGV[5+m ..]     triples: offset, lane index j (0: independent record), payload ('' for an independent record)

  Returns { 0, parked } with how many records were parked (heads included)
]]
-- #include lib/lanes-entry.lua

local bitsKey, metaKey, lanesKey = KEYS[1], KEYS[2], KEYS[3]
local now, from, to, m = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local base = tonumber(redis.call('HGET', metaKey, 'base'))
local independent = {}
local parked, bytes, opened = 0, 0, 0
for i = 5 + m, #ARGV, 3 do
  local offset, j, payload = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  if j == 0 then
    independent[tonumber(offset)] = true
  else
    local lane = ARGV[4 + j]
    if redis.call('HEXISTS', lanesKey, lane) == 0 then
      redis.call('HSET', lanesKey, lane, joinEntry({ offset, '1', 'retrying', now, now, '', now }))
      opened = opened + 1
    end
    redis.call('RPUSH', KEYS[3 + j], offset .. ':' .. payload)
    parked = parked + 1
    bytes = bytes + #payload
  end
end
for o = from, to do
  if not independent[o] then redis.call('SETBIT', bitsKey, o - base, 1) end
end
redis.call('HINCRBY', metaKey, 'parked', parked)
redis.call('HINCRBY', metaKey, 'parkedBytes', bytes)
redis.call('HINCRBY', metaKey, 'blockedTotal', opened)
return { 0, parked }
