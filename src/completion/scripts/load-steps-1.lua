--[[
  Read the stored step results of several records of one partition in one call: the records that reach their first
  `ctx.step` at about the same time share the round trip. A read, in a script only to take many keys of one slot at
  once on Redis Cluster too.

  KEYS[j]  (j = 1..n) steps (hash: step name -> serialized result) of a record, all under one partition's hash tag

  Returns one entry per KEYS[j]: the flat HGETALL reply (name, result, name, result, ...), empty when none.
]]
local replies = {}
for j = 1, #KEYS do
  replies[j] = redis.call('HGETALL', KEYS[j])
end
return replies
