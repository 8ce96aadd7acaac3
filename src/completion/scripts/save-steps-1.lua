--[[
  Store the results of completed durable steps (`ctx.step`) of the records of one partition, one call for every
  step that completed at about the same time (the steps of records running at once share the round trip), each
  unless a result of that step is stored already.

  A run of a record cut off by its deadline goes on detached and may finish a step after the next run of the record
  stored the same step: the first result stored is kept, and the later run is handed it, so every run of the record
  goes on with one result. A record's hash lives as long as its whole retry path plus the replay horizon; every
  store renews that.

  KEYS[j]  (j = 1..n) steps (hash: step name -> serialized result) of a record, all under one partition's hash tag

  ARGV[1]          time to live (ms)
  ARGV[2j], [2j+1] step name and serialized result for KEYS[j]

  Returns one entry per KEYS[j]:
    0                stored
    { result }       a result was stored already (by another run): nothing changed but the time to live
]]
local ttl = ARGV[1]
local replies = {}
for j = 1, #KEYS do
  local name, value = ARGV[2 * j], ARGV[2 * j + 1]
  local stored = redis.call('HSETNX', KEYS[j], name, value)
  redis.call('PEXPIRE', KEYS[j], ttl)
  if stored == 1 then
    replies[j] = 0
  else
    replies[j] = { redis.call('HGET', KEYS[j], name) }
  end
end
return replies
