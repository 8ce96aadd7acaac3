--[[
  Store the results of completed durable steps (`ctx.step`) of the records of one partition, one call for every
  step that completed at about the same time (the steps of records running at once share the round trip), each
  unless a result of that step is stored already.

  A step's result is the field `<offset>:<step name>` of the hash of its record's step block: the offsets from a
  multiple of the block size (`STEPS_PER_BLOCK`, 32). The records of a call share a few keys, so a step costs Redis
  a field, not a key with a time to live of its own.

  A run of a record cut off by its deadline goes on detached and may finish a step after the next run of the record
  stored the same step: the first result stored is kept, and the later run is handed it, so every run of the record
  goes on with one result. A block lives as long as a record's whole retry path plus the replay horizon after the
  last store into it.

  The partition's marker keeps the highest offset with stored results, as long as any of them lives: admission
  tells a record above it (and above every offset admitted before) that it has no stored results to read.

  KEYS[1]      stepped (string: the highest offset of the partition with stored step results)
  KEYS[1 + b]  (b = 1..m) step blocks (hash: "<offset>:<step name>" -> result), all under one partition's hash tag

  ARGV[1]  time to live (ms)
  ARGV[2]  the highest offset among the records of the call
  ARGV[3j], ARGV[3j + 1], ARGV[3j + 2]  (j = 1..n) the j-th store: its block b (KEYS[1 + b]), field and result

  Returns one entry per store:
    0                stored
    { result }       a result was stored already (by another run): nothing changed
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
for j = 1, (#ARGV - 2) / 3 do
  local key, field = KEYS[1 + tonumber(ARGV[3 * j])], ARGV[3 * j + 1]
  if redis.call('HSETNX', key, field, ARGV[3 * j + 2]) == 1 then
    replies[j] = 0
  else
    replies[j] = { redis.call('HGET', key, field) }
  end
end
for b = 2, #KEYS do redis.call('PEXPIRE', KEYS[b], ttl) end
return replies
