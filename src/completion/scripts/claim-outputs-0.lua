--[[
  Take outputs of another kafka-lanes stage for the records that run them (`dedupeOutputs`), one call for the
  records of one origin partition that start at about the same time: a stage that ran twice after a crash sent its
  outputs twice, at two offsets; only the first record to take an output runs it.

  The taker is the running record's first origin, so its own redeliveries, retries and replays take it again. A
  repeat of an output whose taker was dead-lettered is still a repeat: the dead letter is where it is replayed from.

  KEYS[j]  (j = 1..n) an output's claim (string: the taker, `<topic>/<partition>/<offset>`), all under one hash tag

  ARGV[1]      time to live (ms)
  ARGV[1 + j]  the taker of KEYS[j]

  Returns one entry per KEYS[j]:
    0            taken (first, or again by the same record): run it
    { taker }    REPEAT: another record took it; nothing changed
]]
local ttl = ARGV[1]
local replies = {}
for j = 1, #KEYS do
  local claimKey, runner = KEYS[j], ARGV[1 + j]
  local taker = redis.call('GET', claimKey)
  if taker and taker ~= runner then
    replies[j] = { taker }
  else
    redis.call('SET', claimKey, runner, 'PX', ttl)
    replies[j] = 0
  end
end
return replies
