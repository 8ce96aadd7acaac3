--[[
  setRun(bitsKey, a, b): sets bits a..b of the bitmap at bitsKey, the edges bit by bit and the whole bytes
  between them with one SETRANGE. The caller has grown the bitmap to hold b (cover.lua).
]]
local function setRun(bitsKey, a, b)
  local i = a
  while i <= b and i % 8 ~= 0 do redis.call('SETBIT', bitsKey, i, 1); i = i + 1 end
  local wholeBytes = math.floor((b - i + 1) / 8)
  if wholeBytes > 0 then
    redis.call('SETRANGE', bitsKey, i / 8, string.rep('\255', wholeBytes))
    i = i + wholeBytes * 8
  end
  while i <= b do redis.call('SETBIT', bitsKey, i, 1); i = i + 1 end
end
