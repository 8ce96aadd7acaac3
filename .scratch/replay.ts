import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { REDIS_URL } from '../test/integration/support/stack';
import { runOnRedis } from '../test/support/history-redis';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8').replace(/undefined/g, 'null'), (k, v) => (v === null && (k === 'caps' || k === 'poison') ? undefined : v));
  const redis = new Redis(REDIS_URL);
  try { await runOnRedis(redis, spec); console.log('passed'); } catch (e) { console.log(String((e as Error).message)); } finally { await redis.quit(); }
}
void main();
