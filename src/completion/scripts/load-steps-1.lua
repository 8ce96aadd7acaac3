--[[
  Read the stored step results of several records of one partition in one call: the records that reach their first
  `ctx.step` at about the same time share the round trip. Only records that may have run before read (a crash, a
  redelivery), so reading whole blocks costs little.

  A record's results are the fields `<offset>:<step name>` of its step block (save-steps-1.lua); each block of the
  call is read once. Results stored by scripts version 11, one hash per record, are read too, so a record in flight
  across the upgrade keeps its completed steps; where both hold a step, the block's result wins (it was stored by a
  later run that read the hash first).

  KEYS[j]      (j = 1..n) the step block of the j-th record (hash: "<offset>:<step name>" -> result), all under one
               partition's hash tag
  KEYS[n + j]  the j-th record's hash of scripts version 11 (step name -> result)
  ARGV[j]      the j-th record's offset

  Returns one entry per record: its results flat (name, result, name, result, ...), empty when none.
]]
local n = #ARGV
-- Per block read: offset -> its results flat.
local blocks = {}
local replies = {}
for j = 1, n do
  local byOffset = blocks[KEYS[j]]
  if byOffset == nil then
    byOffset = {}
    local all = redis.call('HGETALL', KEYS[j])
    for i = 1, #all, 2 do
      local offset, name = string.match(all[i], '^(%d+):(.*)$')
      local flat = byOffset[offset]
      if flat == nil then
        flat = {}
        byOffset[offset] = flat
      end
      flat[#flat + 1] = name
      flat[#flat + 1] = all[i + 1]
    end
    blocks[KEYS[j]] = byOffset
  end
  local flat, seen = {}, {}
  for i, value in ipairs(byOffset[ARGV[j]] or {}) do
    flat[i] = value
    if i % 2 == 1 then seen[value] = true end
  end
  local old = redis.call('HGETALL', KEYS[n + j])
  for i = 1, #old, 2 do
    if not seen[old[i]] then
      flat[#flat + 1] = old[i]
      flat[#flat + 1] = old[i + 1]
    end
  end
  replies[j] = flat
end
return replies
