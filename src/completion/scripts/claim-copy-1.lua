--[[
  Unordered mode's check before a retry copy runs, by (origin, attempt): the hand-off promises that a copy of an
  attempt that already ran, or of a record already terminal, does nothing. Key mode has the lane's head for that
  (claim-1.lua); a record without a lane has this entry instead, one per origin offset that went to the retry path.

  A copy written twice (a crash between its write and the acknowledgement, a send retried) would otherwise run
  twice and, failing twice, start two retry chains. The copy that takes an attempt is named by its own
  `topic:partition:offset`, so its redelivery (its invocation died) takes it again.

  KEYS[1]  the origin offset's copy entry (string: "attempt|copy|state", state `run` or `done`)

  ARGV[1]  attempt of the copy
  ARGV[2]  the copy: `topic:partition:offset` of the retry copy (never contains '|')
  ARGV[3]  time to live (ms)
  ARGV[4]  `claim` before the copy runs, `done` once it succeeded (the record is terminal)

  Returns
    { 0 }            claimed (or recorded done): run it
    { 1, entry }     STALE: the record is terminal, a later attempt ran, or another copy took this attempt
]]
local copyKey = KEYS[1]
local attempt = tonumber(ARGV[1])
local entry = redis.call('GET', copyKey)
if entry then
  local a, copy, state = string.match(entry, '^(%d+)|([^|]*)|(%a+)$')
  if a then
    a = tonumber(a)
    if ARGV[4] == 'claim' then
      if state == 'done' or a > attempt or (a == attempt and copy ~= ARGV[2]) then return { 1, entry } end
    end
  end
end
local state = 'run'
if ARGV[4] == 'done' then state = 'done' end
redis.call('SET', copyKey, ARGV[1] .. '|' .. ARGV[2] .. '|' .. state, 'PX', ARGV[3])
return { 0 }
