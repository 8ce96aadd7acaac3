--[[
  Records that the completion group holds a marker naming the state's generation (`marked`), once the committer knows
  its commit landed; nothing when the state carries another generation (made again since). Until then a lane held by
  the `hold` policy keeps a watch copy in the retry path (docs/durability.md, "Held and drained lanes in the first minute").

  KEYS[1]  meta

  ARGV[1]  generation

  Returns { 0, 1 when marked, 0 when the state carries another generation }
]]
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return { 0, 0 } end
redis.call('HSET', KEYS[1], 'marked', ARGV[1])
return { 0, 1 }
