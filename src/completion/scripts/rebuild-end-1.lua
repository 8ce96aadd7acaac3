--[[
  A recovery's rebuild of a partition, last step (after its records, rebuild-records-3): lifts the fence and stamps
  the new generation; the partition is whole again.

  One script for both: a state unfenced without a generation admits records while the committer's loss check reads
  it as made again since the marker (no generation, or one `stamp-generation-1` gave it), and recovers it once more.

  KEYS[1]  meta

  ARGV[1]  generation

  Returns { 0 }
]]
redis.call('HDEL', KEYS[1], 'recovering')
redis.call('HSET', KEYS[1], 'gen', ARGV[1])
return { 0 }
