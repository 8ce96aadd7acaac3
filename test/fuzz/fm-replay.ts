import { Redis } from 'ioredis';
import { REDIS_URL } from '../integration/support/stack';
import { runOnRedis } from '../support/history-redis';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
const spec = JSON.parse(process.argv[2]!);
const redis = new Redis(REDIS_URL);
runOnRedis(redis, spec).then((s) => console.log('ok', JSON.stringify(s)), (e: unknown) => console.log(String(e), (e as { trace?: unknown }).trace ?? '')).finally(() => redis.quit());
