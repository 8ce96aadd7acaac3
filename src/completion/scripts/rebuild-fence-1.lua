--[[
  The first step of a recovery's rebuild of a partition after a detected loss (docs/durability.md): the fence alone,
  set before the recovery reads where the partition ends in Kafka. `admit` refuses every record while the fence
  stands (not expired), so no record delivered meanwhile runs ahead of a recovered one. The next steps:
  rebuild-begin-3, rebuild-records-3, rebuild-end-1.

  KEYS[1]  meta

  ARGV[1]  fence until (epoch ms)

  Returns { 0 }
]]
redis.call('HSET', KEYS[1], 'recovering', ARGV[1])
return { 0 }
