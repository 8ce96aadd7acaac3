--[[
  Take an output of another kafka-lanes stage for the record that runs it (`dedupeOutputs`): a stage that ran twice
  after a crash sent its outputs twice, at two offsets; only the first record to take an output runs it.

  The taker is the running record's first origin, so its own redeliveries, retries and replays take it again. A
  repeat of an output whose taker was dead-lettered is still a repeat: the dead letter is where it is replayed from.

  KEYS[1]  the output's claim (string: the taker, `<topic>/<partition>/<offset>`)

  ARGV[1]  the taker
  ARGV[2]  time to live (ms)

  Returns
    { 0 }            taken (first, or again by the same record): run it
    { 1, taker }     REPEAT: another record took it; nothing changed
]]
local claimKey = KEYS[1]
local taker = redis.call('GET', claimKey)
if taker and taker ~= ARGV[1] then return { 1, taker } end
redis.call('SET', claimKey, ARGV[1], 'PX', ARGV[2])
return { 0 }
