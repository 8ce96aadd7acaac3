--[[
  setBits(bitsKey, bits, from, to): sets the bits bits[from..to] (ascending; a repeat is allowed) of the bitmap at
  bitsKey and returns how many were clear before. The caller has grown the bitmap to hold bits[to] (cover.lua).

  Bits close to each other (under 32 bytes apart) are set together: their bytes are read with one GETRANGE, changed
  here and written back with one SETRANGE. A bit alone is one SETBIT. Done bits come scattered (records of many keys
  finish out of order) and a SETBIT per bit was most of a mark's time in Redis; changing a byte here costs a small
  fraction of a command.
]]
local function setBits(bitsKey, bits, from, to)
  local newlySet = 0
  local i = from
  while i <= to do
    local j = i
    while j < to and bits[j + 1] - bits[j] < 256 do j = j + 1 end
    if j == i then
      if redis.call('SETBIT', bitsKey, bits[i], 1) == 0 then newlySet = newlySet + 1 end
    else
      local first = math.floor(bits[i] / 8)
      local text = redis.call('GETRANGE', bitsKey, first, math.floor(bits[j] / 8))
      local bytes = {}
      -- In slices: string.byte and string.char pass their values on Lua's stack, which holds some thousands.
      for s = 1, #text, 4096 do
        local slice = { string.byte(text, s, math.min(s + 4095, #text)) }
        for t = 1, #slice do bytes[s + t - 1] = slice[t] end
      end
      for k = i, j do
        local at = math.floor(bits[k] / 8) - first + 1
        local mask = bit.rshift(128, bits[k] % 8)
        if bit.band(bytes[at], mask) == 0 then
          bytes[at] = bit.bor(bytes[at], mask)
          newlySet = newlySet + 1
        end
      end
      local parts = {}
      for s = 1, #bytes, 4096 do parts[#parts + 1] = string.char(unpack(bytes, s, math.min(s + 4095, #bytes))) end
      redis.call('SETRANGE', bitsKey, first, table.concat(parts))
    end
    i = j + 1
  end
  return newlySet
end
