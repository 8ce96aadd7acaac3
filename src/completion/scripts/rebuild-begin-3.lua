--[[
  A recovery's rebuild of a partition, second step (after rebuild-fence-1): deletes the partition's state (the keys
  given) and starts afresh: `base` = the durable frontier, `highest` = the last offset to recover, `born` = the lowest
  offset the completion group's commits vouch for (the durable marker's, or the durable frontier), every done bit
  clear, the fence set; counts the recovery (`recoveries`) and stamps when it began (`recoveredAt`, epoch ms of the
  Redis clock).

  One script for the deletion and the fresh `meta` with its fence: between the two an `admit` would find no state and
  make one of its own, unfenced, and run records ahead of the recovered ones.

  KEYS[1]      bits
  KEYS[2]      meta
  KEYS[3]      lanes
  KEYS[3 + j]  further keys to delete (the park lists a lost state left behind)

  ARGV[1]  base
  ARGV[2]  highest
  ARGV[3]  fence until (epoch ms)
  ARGV[4]  born

  Returns { 0 }
]]
local bitsKey, metaKey, lanesKey = KEYS[1], KEYS[2], KEYS[3]
local function fmt(x) return string.format('%.0f', x) end

local recoveries = tonumber(redis.call('HGET', metaKey, 'recoveries')) or 0
local time = redis.call('TIME')
redis.call('DEL', bitsKey, metaKey, lanesKey)
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('HSET', metaKey, 'base', ARGV[1], 'highest', ARGV[2], 'parked', '0', 'parkedBytes', '0',
  'blockedTotal', '0', 'freedTotal', '0', 'recovering', ARGV[3], 'born', ARGV[4], 'recoveries', fmt(recoveries + 1),
  'recoveredAt', fmt(tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)))
return { 0 }
