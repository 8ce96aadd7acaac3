--[[
  Store the results of completed durable steps (`ctx.step`) of the records of one partition, one call for every
  step that completed at about the same time (the steps of records running at once share the round trip), each
  unless a result of that step is stored already.

  A run of a record cut off by its deadline goes on detached and may finish a step after the next run of the record
  stored the same step: the first result stored is kept, and the later run is handed it, so every run of the record
  goes on with one result. A record's hash lives as long as its whole retry path plus the replay horizon; every
  store renews that.

  The partition's marker keeps the highest offset with stored results, as long as any of them lives: admission
  tells a record above it (and above every offset admitted before) that it has no stored results to read.

  KEYS[1]      stepped (string: the highest offset of the partition with stored step results)
  KEYS[1 + j]  (j = 1..n) steps (hash: step name -> serialized result) of a record, all under one partition's hash tag

  ARGV[1]          time to live (ms)
  ARGV[2]          the highest offset among the records of KEYS
  ARGV[2j+1], [2j+2] step name and serialized result for KEYS[1 + j]

  Returns one entry per KEYS[1 + j]:
    0                stored
    { result }       a result was stored already (by another run): nothing changed but the time to live
]]
local ttl = ARGV[1]
local top = tonumber(ARGV[2])
local marked = tonumber(redis.call('GET', KEYS[1]))
if marked == nil or top > marked then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local replies = {}
for j = 1, #KEYS - 1 do
  local key, name, value = KEYS[j + 1], ARGV[2 * j + 1], ARGV[2 * j + 2]
  local stored = redis.call('HSETNX', key, name, value)
  redis.call('PEXPIRE', key, ttl)
  if stored == 1 then
    replies[j] = 0
  else
    replies[j] = { redis.call('HGET', key, name) }
  end
end
return replies
