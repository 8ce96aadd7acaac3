--[[
  cover(bitsKey, bit): grows the bitmap at bitsKey so that it holds bit `bit`. Included where a script
  needs it (`-- #include lib/cover.lua`, expanded by `npm run build:scripts`), so admit-3 and mark-2 grow
  the bitmap by one definition.

  Redis grows a string in place greedily: a SETRANGE or SETBIT past its end reserves as much again (up to
  1 MiB), so a bitmap grown run by run held up to twice its length. A string written whole is allocated at
  its length, so the bitmap is grown here instead, rewritten whole to the next size of a grid of four
  steps per power of two: the allocator's own size classes, so the zero bytes past the bit cost no memory,
  and a growing bitmap is rewritten a few times per doubling. Trimming drops them.
]]
local function cover(bitsKey, bit)
  local len = redis.call('STRLEN', bitsKey)
  local need = math.floor(bit / 8) + 1
  if need <= len then return end
  -- 16: the string's header and terminator, rounded up.
  local total, power = need + 16, 16
  while power * 2 < total do power = power * 2 end
  local step = power / 4
  local size = power + math.ceil((total - power) / step) * step - 16
  if len == 0 then redis.call('SETRANGE', bitsKey, size - 1, '\0')
  else redis.call('SET', bitsKey, redis.call('GET', bitsKey) .. string.rep('\0', size - len)) end
end
