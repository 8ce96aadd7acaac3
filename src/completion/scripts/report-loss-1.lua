--[[
  Records that a retry copy found the partition's state lost (its lane gone, its origin unknown or not done, or below
  where the state was born): the committer's next run recovers the partition even when its own checks see nothing.
  Keeps when the first report came (`lossReported`) and the lowest origin reported (`lossReportedFrom`): a copy older
  than the state tells where the lost records begin when a commit made before any marker existed passed them.

  KEYS[1]  meta

  ARGV[1]  now (epoch ms)
  ARGV[2]  origin: the reporting copy's origin offset

  Returns { 0 }
]]
local metaKey = KEYS[1]
redis.call('HSETNX', metaKey, 'lossReported', ARGV[1])
local from = tonumber(redis.call('HGET', metaKey, 'lossReportedFrom'))
if from == nil or tonumber(ARGV[2]) < from then redis.call('HSET', metaKey, 'lossReportedFrom', ARGV[2]) end
return { 0 }
