import { parkKey, partitionKeys } from './keys';
import type { RedisClient } from './scripts';
import type { PartitionRef } from '../ports/partition';

/**
 * What the operator tools read of a partition's state beside the store's own readings (`kafka-lanes status`, the
 * dashboard, `kafka-lanes reset`'s plan), read as they are: a lane entry in a shape this version does not know still
 * counts, so nothing here parses strictly. And the one deletion of state outside a script: `kafka-lanes reset`'s.
 *
 * @example
 * const facts = await readRecoveryFacts(redis, { group: 'orders-svc', topic: 'orders', partition: 3 });
 */

/** Every blocked lane's entry as stored (lane id to `headOffset|attempt|state|...`). */
export function readLaneEntries(redis: RedisClient, ref: PartitionRef): Promise<Record<string, string>> {
  return redis.hgetall(partitionKeys(ref).lanes);
}

/** What `meta` says of parked records and recoveries. */
export interface RecoveryFacts {
  /** Records parked behind blocked heads. */
  readonly parked: number;
  /** Times the partition was recovered. */
  readonly recoveries: number;
  /** Until when a recovery's fence stands (epoch ms; 0 when none). */
  readonly fenceUntilMs: number;
  /** When the last recovery began (epoch ms, Redis' clock), if one was recorded. */
  readonly recoveredAtMs: number | undefined;
}

/** The partition's parked count and recoveries, from one `HMGET` of its `meta`. */
export async function readRecoveryFacts(redis: RedisClient, ref: PartitionRef): Promise<RecoveryFacts> {
  const [parked, recoveries, recovering, recoveredAt] = await redis.hmget(partitionKeys(ref).meta, 'parked', 'recoveries', 'recovering', 'recoveredAt');
  return {
    parked: Number(parked ?? 0),
    recoveries: Number(recoveries ?? 0),
    fenceUntilMs: Number(recovering ?? 0),
    recoveredAtMs: recoveredAt ? Number(recoveredAt) : undefined,
  };
}

/** A lane's park list: its length and the offset of its first record (a head drained inline is kept there first). */
export async function readParkList(redis: RedisClient, ref: PartitionRef, lane: string): Promise<{ length: number; firstOffset: number | undefined }> {
  const key = parkKey(ref, lane);
  const [length, first] = await Promise.all([redis.llen(key), redis.lindex(key, 0)]);
  return { length, firstOffset: first === null ? undefined : Number(first.slice(0, first.indexOf(':'))) };
}

/** Deletes keys of one partition (they share a hash slot, so one `DEL` works on a Cluster too); how many were deleted. */
export function deletePartitionKeys(redis: RedisClient, keys: readonly string[]): Promise<number> {
  return keys.length === 0 ? Promise.resolve(0) : redis.del(...keys);
}
