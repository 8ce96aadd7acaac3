--[[
  Store the result of one completed durable step of a record (`ctx.step`), unless one is stored already.

  A run of a record cut off by its deadline goes on detached and may finish a step after the next run of the record
  stored the same step: the first result stored is kept, and the later run is handed it, so every run of the record
  goes on with one result. The hash lives as long as the record's whole retry path plus the replay horizon; every
  store renews that.

  KEYS[1]  steps (hash: step name -> serialized result) of one record, under its first origin's partition tag

  ARGV[1]  step name
  ARGV[2]  serialized result
  ARGV[3]  time to live (ms)

  Returns
    { 0 }            stored
    { 1, result }    a result was stored already (by another run): nothing changed but the time to live
]]
local stepsKey = KEYS[1]
local stored = redis.call('HSETNX', stepsKey, ARGV[1], ARGV[2])
redis.call('PEXPIRE', stepsKey, ARGV[3])
if stored == 1 then return { 0 } end
return { 1, redis.call('HGET', stepsKey, ARGV[1]) }
