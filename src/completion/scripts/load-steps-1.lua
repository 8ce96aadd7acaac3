--[[
  Read the stored step results of several records of one partition in one call: the records that reach their first
  `ctx.step` at about the same time share the round trip. A read, in a script only to take many keys of one slot at
  once on Redis Cluster too.

  A record's results are its field in its step block (see `save-steps`). Until the hashes of one record each
  (`steps:<offset>`, scripts version 11) have expired, a record's results stored there are read too: a record that
  ran before an upgrade keeps its completed steps.

  KEYS[2j-1]  (j = 1..n) the step block of record j (hash: offset -> JSON object of step name -> result)
  KEYS[2j]    the record's own hash of scripts version 11 (step name -> result)
  ARGV[j]     record j's offset (its field in its block)

  Returns one entry per record: { its field's JSON text, or '' when none, then the flat HGETALL of its own hash }.
]]
local replies = {}
for j = 1, #ARGV do
  local reply = redis.call('HGETALL', KEYS[2 * j])
  table.insert(reply, 1, redis.call('HGET', KEYS[2 * j - 1], ARGV[j]) or '')
  replies[j] = reply
end
return replies
