import type { Redis } from 'ioredis';
import { escapeName, trackedPartitionsKey } from '../../src/completion';
import { createKafka } from '../integration/support/stack';

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

/**
 * Waits until the broker serves the topics' metadata: on KRaft a topic just created may still be unknown to
 * the broker's metadata cache, and kafkajs does not retry UNKNOWN_TOPIC_OR_PARTITION.
 */
export async function waitForTopics(topics: string[]): Promise<void> {
  const admin = createKafka().admin();
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const { topics: found } = await admin.fetchTopicMetadata({ topics });
        if (found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
      } catch (error) {
        if (attempt >= 100) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await admin.disconnect();
  }
}

