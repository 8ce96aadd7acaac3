--[[
  Release a lane whose head has become terminal (DESIGN.md section 4, retry function): pop the lane's
  next parked record and make it the new head, or free the lane when nothing is parked. Anyone may
  release a lane (DESIGN.md section 5); the expected head makes a duplicated release a no-op.

  KEYS[1]  meta
  KEYS[2]  lanes
  KEYS[3]  park list of the lane

  ARGV[1]  lane id
  ARGV[2]  expected head offset
  ARGV[3]  attempt of the new head (the attempt number its run or retry record will carry)
  ARGV[4]  now (epoch ms)

  Returns
    { 0 }                          lane freed: nothing was parked
    { 1, offset, payload }         the next parked record, now the lane's head (state 'retrying')
    { -4, head }                   NOT_HEAD: the lane's head is another record, or the lane is free
                                   (head is '' then); nothing changed
]]
local metaKey, lanesKey, parkKey = KEYS[1], KEYS[2], KEYS[3]
local lane = ARGV[1]
local current = redis.call('HGET', lanesKey, lane)
if not current then return { -4, '' } end
local currentHead = string.match(current, '^(%d+)|')
if currentHead ~= ARGV[2] then return { -4, currentHead } end

local entry = redis.call('LPOP', parkKey)
if not entry then
  redis.call('HDEL', lanesKey, lane)
  return { 0 }
end
local sep = string.find(entry, ':', 1, true)
redis.call('HINCRBY', metaKey, 'parked', -1)
redis.call('HINCRBY', metaKey, 'parkedBytes', -(#entry - sep))
local offset = string.sub(entry, 1, sep - 1)
redis.call('HSET', lanesKey, lane, offset .. '|' .. ARGV[3] .. '|retrying|' .. ARGV[4])
return { 1, offset, string.sub(entry, sep + 1) }
