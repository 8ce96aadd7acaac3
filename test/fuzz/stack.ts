import type { Redis } from 'ioredis';
import { escapeName, trackedPartitionsKey } from '../../src/completion';

/** Helpers of the bad-input property's runs on the local stack. */

/** Deletes every Redis key of a test group (its partitions' bitmaps, lanes and park lists). */
export async function deleteGroupKeys(redis: Redis, group: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `{kl:${escapeName(group)}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.del(trackedPartitionsKey(group));
}
