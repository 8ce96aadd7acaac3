--[[
  Rebuild a partition's completion state from records read again from Kafka, after a detected loss (README,
  "Durability"). Called in steps by the recovery:

  'fence'   sets the fence alone, before the recovery reads where the partition ends in Kafka.
  'begin'   deletes the partition's state (the keys given) and starts afresh: `base` = the durable frontier,
            `highest` = the last offset to recover, `born` = the lowest offset the completion group's commits vouch
            for (the durable marker's, or the durable frontier), every done bit clear, the fence set; counts the recovery
            (`recoveries`) and stamps when it began (`recoveredAt`, epoch ms of the Redis clock). `admit` refuses every
            record while the fence stands, so no record delivered meanwhile runs ahead of a recovered one.
  'records' takes one chunk of the records, in offset order: the first record of a lane becomes its head
            (attempt 1, due now, a lease already expired, its payload first in its park list: the committer's
            re-drive writes its retry copy), the lane's later records are parked behind it. Every offset of
            the chunk's range gets its done bit (gaps included) except the independent records, which the
            caller hands off itself and marks done after the write.
  'end'     lifts the fence and stamps the generation: the partition is whole again.
  'report'  records that a retry copy found the partition's state lost (its lane gone, its origin unknown or not
            done, or below where the state was born): the committer's next run recovers the partition even when its
            own checks see nothing. Keeps the lowest origin reported (`lossReportedFrom`): a copy older than the state
            tells where the lost records begin when a commit made before any marker existed passed them.
  'stamp'   stamps a first generation on a state that has none (the committer, before its first marker).
  'mark'    records that the completion group holds a marker naming the state's generation (`marked`), once the
            committer knows it landed; nothing when the state carries another generation (made again since). Until
            then a lane held by the `hold` policy keeps a watch copy in the retry path (README, "Durability").

  KEYS[1]      bits
  KEYS[2]      meta
  KEYS[3]      lanes
  KEYS[3 + j]  'begin': keys to delete (park lists); 'records': park list of the j-th lane named in ARGV

  'fence'    ARGV: 'fence', fence until (epoch ms)
  'begin'    ARGV: 'begin', base, highest, fence until (epoch ms), born
  'records'  ARGV: 'records', now (epoch ms), from, to, m, lane ids (m), then triples:
             offset, lane index j (0: independent record), payload ('' for an independent record)
  'end'      ARGV: 'end', generation
  'report'   ARGV: 'report', now (epoch ms), origin
  'stamp'    ARGV: 'stamp', generation; returns { 0, the generation the state carries now }
  'mark'     ARGV: 'mark', generation; returns { 0, 1 when marked, 0 when the state carries another generation }

  Returns { 0 }; 'records' returns { 0, parked } with how many records were parked (heads included)
]]
local bitsKey, metaKey, lanesKey = KEYS[1], KEYS[2], KEYS[3]
local mode = ARGV[1]
local function fmt(x) return string.format('%.0f', x) end

if mode == 'fence' then
  redis.call('HSET', metaKey, 'recovering', ARGV[2])
  return { 0 }
end

if mode == 'begin' then
  local recoveries = tonumber(redis.call('HGET', metaKey, 'recoveries')) or 0
  local time = redis.call('TIME')
  redis.call('DEL', bitsKey, metaKey, lanesKey)
  for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
  redis.call('HSET', metaKey, 'base', ARGV[2], 'highest', ARGV[3], 'parked', '0', 'parkedBytes', '0',
    'blockedTotal', '0', 'freedTotal', '0', 'recovering', ARGV[4], 'born', ARGV[5], 'recoveries', fmt(recoveries + 1),
    'recoveredAt', fmt(tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)))
  return { 0 }
end

if mode == 'report' then
  redis.call('HSETNX', metaKey, 'lossReported', ARGV[2])
  local from = tonumber(redis.call('HGET', metaKey, 'lossReportedFrom'))
  if from == nil or tonumber(ARGV[3]) < from then redis.call('HSET', metaKey, 'lossReportedFrom', ARGV[3]) end
  return { 0 }
end

if mode == 'stamp' then
  redis.call('HSETNX', metaKey, 'gen', ARGV[2])
  return { 0, redis.call('HGET', metaKey, 'gen') }
end

if mode == 'mark' then
  if redis.call('HGET', metaKey, 'gen') ~= ARGV[2] then return { 0, 0 } end
  redis.call('HSET', metaKey, 'marked', ARGV[2])
  return { 0, 1 }
end

if mode == 'end' then
  redis.call('HDEL', metaKey, 'recovering')
  redis.call('HSET', metaKey, 'gen', ARGV[2])
  return { 0 }
end

local now, from, to, m = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local base = tonumber(redis.call('HGET', metaKey, 'base'))
local independent = {}
local parked, bytes, opened = 0, 0, 0
for i = 6 + m, #ARGV, 3 do
  local offset, j, payload = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  if j == 0 then
    independent[tonumber(offset)] = true
  else
    local lane = ARGV[5 + j]
    if redis.call('HEXISTS', lanesKey, lane) == 0 then
      redis.call('HSET', lanesKey, lane, table.concat({ offset, '1', 'retrying', now, now, '', now }, '|'))
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
