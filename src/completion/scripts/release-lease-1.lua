--[[
  Release the committer lease, but only if this run still holds it (compare-and-delete): a plain DEL
  after the lease expired would release another run's lease.

  KEYS[1]  lease key

  ARGV[1]  token of this run

  Returns
    1  released
    0  not held (expired, or another run holds it); nothing changed
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
