--[[
  The `:lanes` entry of one blocked lane, read and written by one codec (`-- #include lib/lanes-entry.lua`):
  fields joined by '|', in this order
    1 headOffset   2 attempt   3 state ('retrying' | 'held')   4 sinceMs   5 dueAtMs
    6 reason (a held head's dead-letter reason; never holds '|')
    7 leaseUntilMs of a head drained inline or being written ('' or absent: none)
    8 claimCopy, 9 claimUntilMs: the retry copy running the head now (claim-1.lua)
  Fields 7 to 9 are optional: an entry ends after its last one set. completion/lanes-entry.ts reads the same format.

  entryHead(entry): the head offset (a string of digits), without splitting the whole entry.
  splitEntry(entry): the fields, in order, empty ones kept ('' for a field written empty).
  joinEntry(fields): the entry of fields 1..#fields.
]]
local function entryHead(entry) return string.match(entry, '^(%d+)|') end

local function splitEntry(entry)
  local fields, start = {}, 1
  while true do
    local sep = string.find(entry, '|', start, true)
    if not sep then
      fields[#fields + 1] = string.sub(entry, start)
      return fields
    end
    fields[#fields + 1] = string.sub(entry, start, sep - 1)
    start = sep + 1
  end
end

local function joinEntry(fields) return table.concat(fields, '|') end
