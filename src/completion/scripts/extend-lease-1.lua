--[[
  Extend the committer lease, but only if this run still holds it (compare-and-expire): a run whose
  lease expired and was taken by another run must not take it back.

  KEYS[1]  lease key

  ARGV[1]  token of this run
  ARGV[2]  new time to live in ms

  Returns
    1  extended: this run holds the lease for ARGV[2] ms more
    0  not held: the lease expired or another run holds it; nothing changed
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
