--[[
  Store the results of completed durable steps (`ctx.step`) of the records of one partition, one call for every
  step that completed at about the same time (the steps of records running at once share the round trip), each
  unless a result of that step is stored already.

  A partition's step results live in hashes of STEP_BLOCK (1,024) offsets each (`stepblock:<offset / 1024>`), one
  field per record (its offset) holding a JSON object of step name -> serialized result. A block lives as long as
  the whole retry path plus the replay horizon after the last store into it; a record's field is deleted once the
  record is terminal (by `mark`, or by the retry path for a copy).

  A run of a record cut off by its deadline goes on detached and may finish a step after the next run of the record
  stored the same step: the first result stored is kept, and the later run is handed it, so every run of the record
  goes on with one result.

  The partition's marker keeps the highest offset with stored results, as long as any of them lives: admission
  tells a record above it (and above every offset admitted before) that it has no stored results to read.

  KEYS[1]      stepped (string: the highest offset of the partition with stored step results)
  KEYS[2..]    step blocks (hash: offset -> JSON object of step name -> result), all under one partition's hash tag

  ARGV[1]      time to live (ms)
  ARGV[2]      the highest offset among the records of the call
  ARGV[3]      the saves, a JSON array, four entries per save: the index of its block in KEYS, the record's offset
               (a decimal string), the step name, the serialized result

  Returns a flat list, two entries per save whose step had a result stored already (by another run, nothing
  changed then but the time to live): the save's position in the call (1-based), the result stored. Empty when
  every result was stored.
]]
local ttl = ARGV[1]
local top = tonumber(ARGV[2])
local marked = tonumber(redis.call('GET', KEYS[1]))
if marked == nil or top > marked then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local saves = cjson.decode(ARGV[3])
local replies = {}
for i = 1, #saves, 4 do
  local key, field, name, value = KEYS[saves[i]], saves[i + 1], saves[i + 2], saves[i + 3]
  local text = redis.call('HGET', key, field)
  if not text then
    redis.call('HSET', key, field, cjson.encode({ [name] = value }))
  else
    local steps = cjson.decode(text)
    local stored = steps[name]
    if stored == nil then
      steps[name] = value
      redis.call('HSET', key, field, cjson.encode(steps))
    else
      replies[#replies + 1] = (i + 3) / 4
      replies[#replies + 1] = stored
    end
  end
end
for k = 2, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
return replies
