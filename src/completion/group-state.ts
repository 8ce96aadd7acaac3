import { parkKey, partitionKeys, trackedPartitionsKey } from './keys';
import { findPartitions, partitionKeysPattern, scanKeys } from './redis-scan';
import type { RedisClient } from './scripts';
import { readTrackedMembers } from './tracked';
import type { PartitionRef } from '../ports/partition';

/** What `meta` says of parked records and recoveries. */
export interface RecoveryFacts {
  /** Entries of the partition's park lists (a head kept first in its list included): what the caps count. */
  readonly parked: number;
  /** Times the partition was recovered. */
  readonly recoveries: number;
  /** Until when a recovery's fence stands (epoch ms; 0 when none). */
  readonly fenceUntilMs: number;
  /** When the last recovery began (epoch ms, Redis' clock), if one was recorded. */
  readonly recoveredAtMs: number | undefined;
}

/**
 * The operator tools' door to one group's state, beside the store's own readings (`kafka-lanes status`, the dashboard,
 * `kafka-lanes reset`'s plan): read as it is, so a lane entry in a shape this version does not know still counts and
 * nothing here parses strictly. And the one deletion of state outside a script: `kafka-lanes reset`'s. Opened by the
 * completion store (`store.groupState(group)`), on its connection; it never hands that connection out.
 *
 * @example
 * const facts = await store.groupState('orders-svc').recoveryFacts({ group: 'orders-svc', topic: 'orders', partition: 3 });
 */
export class GroupState {
  readonly group: string;
  readonly #redis: RedisClient;

  constructor(redis: RedisClient, group: string) {
    this.#redis = redis;
    this.group = group;
  }

  /** The partitions the group holds state for, found by a SCAN of its keys. */
  partitions(): Promise<PartitionRef[]> {
    return findPartitions(this.#redis, this.group);
  }

  /** The keys of a topic's partitions (or of one partition), found by a SCAN. */
  partitionKeys(topic: string, partition?: number): Promise<string[]> {
    return scanKeys(this.#redis, partitionKeysPattern(this.group, topic, partition));
  }

  /** Every blocked lane's entry as stored (lane id to `headOffset|attempt|state|...`). */
  laneEntries(ref: PartitionRef): Promise<Record<string, string>> {
    return this.#redis.hgetall(partitionKeys(ref).lanes);
  }

  /** The partition's parked count and recoveries, from one `HMGET` of its `meta`. */
  async recoveryFacts(ref: PartitionRef): Promise<RecoveryFacts> {
    const [parked, recoveries, recovering, recoveredAt] = await this.#redis.hmget(partitionKeys(ref).meta, 'parked', 'recoveries', 'recovering', 'recoveredAt');
    return {
      parked: Number(parked ?? 0),
      recoveries: Number(recoveries ?? 0),
      fenceUntilMs: Number(recovering ?? 0),
      recoveredAtMs: recoveredAt ? Number(recoveredAt) : undefined,
    };
  }

  /**
   * Records parked behind each lane's head, in the order given: the lane's park list, less the head where it is kept
   * first in that list (a parked record that became the head keeps its payload there until the lane is released past
   * it; it is the head, in the retry path, not parked). The one count of parked records `status`, its lanes and the
   * dashboard show; `meta`'s `parked` counts every entry of the lists, heads included, for the caps. A head offset
   * `undefined` (an entry of a shape this version does not read): the whole list.
   */
  parkedBehind(ref: PartitionRef, heads: ReadonlyArray<{ readonly lane: string; readonly headOffset: number | undefined }>): Promise<number[]> {
    return Promise.all(heads.map(async ({ lane, headOffset }) => {
      const key = parkKey(ref, lane);
      const [length, first] = await Promise.all([this.#redis.llen(key), this.#redis.lindex(key, 0)]);
      const firstOffset = first === null ? undefined : Number(first.slice(0, first.indexOf(':')));
      return firstOffset === headOffset ? length - 1 : length;
    }));
  }

  /** Every entry of the group's tracked set, as stored (`<topic>\n<partition>`). */
  trackedMembers(): Promise<string[]> {
    return readTrackedMembers(this.#redis, this.group);
  }

  /** Removes entries from the group's tracked set (`kafka-lanes reset`: the partition's state is gone on purpose). */
  async untrack(members: readonly string[]): Promise<void> {
    if (members.length > 0) await this.#redis.srem(trackedPartitionsKey(this.group), ...members);
  }

  /** Deletes keys of one partition (they share a hash slot, so one `DEL` works on a Cluster too); how many were deleted. */
  deletePartitionKeys(keys: readonly string[]): Promise<number> {
    return keys.length === 0 ? Promise.resolve(0) : this.#redis.del(...keys);
  }
}
