import { trackedPartitionsKey } from './keys';
import { bounded, type RedisClient } from './scripts';
import type { CallLimits } from '../ports/limits';
import type { PartitionRef } from '../ports/partition';

/**
 * The tracked set's entries (`{kl:<group>}:partitions`, one `<topic>\n<partition>` per partition the committer
 * reads), written here and nowhere else (and removed only by `kafka-lanes reset`, through `GroupState`): by the store as it admits (again every minute, so a lost set comes back), by
 * a retry copy reporting a loss, by a recovery, and by the committer for a partition it found by its marker alone.
 *
 * @example
 * await trackPartitions(redis, [{ group: 'orders-svc', topic: 'orders', partition: 3 }]);
 */
export async function trackPartitions(redis: RedisClient, refs: readonly PartitionRef[], limits: CallLimits = {}): Promise<void> {
  const [first] = refs;
  if (first === undefined) return;
  await bounded(redis.sadd(trackedPartitionsKey(first.group), ...refs.map(trackedMember)), 'SADD tracked partitions', limits);
}

/** The partitions the group's tracked set names, sorted (topic, then partition). */
export async function readTrackedPartitions(redis: RedisClient, group: string, limits: CallLimits = {}): Promise<PartitionRef[]> {
  const members = await bounded(redis.smembers(trackedPartitionsKey(group)), 'SMEMBERS tracked partitions', limits);
  return members
    .map((member) => trackedRef(group, member))
    .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

/** Every entry of the group's tracked set, as stored. */
export function readTrackedMembers(redis: RedisClient, group: string): Promise<string[]> {
  return redis.smembers(trackedPartitionsKey(group));
}

/** A partition's entry in its group's tracked set. */
export function trackedMember(ref: { readonly topic: string; readonly partition: number }): string {
  return `${ref.topic}\n${ref.partition}`;
}

/** A tracked set's entry read back. */
export function trackedRef(group: string, member: string): PartitionRef {
  const cut = member.lastIndexOf('\n');
  return { group, topic: member.slice(0, cut), partition: Number(member.slice(cut + 1)) };
}
