--[[
  Stamps a first generation on a partition's state that has none (the committer, before its first marker of it).
  A state that carries one keeps it.

  KEYS[1]  meta

  ARGV[1]  generation

  Returns { 0, the generation the state carries now }
]]
redis.call('HSETNX', KEYS[1], 'gen', ARGV[1])
return { 0, redis.call('HGET', KEYS[1], 'gen') }
