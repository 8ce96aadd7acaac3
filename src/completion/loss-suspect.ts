import type { CallLimits, RedisClient } from './scripts';
import type { PartitionRef } from './types';
import { auditPartition } from './audit';

/** A retry copy held for a suspected loss comes back to look again after this long (a committer run is due by then). */
export const RECOVERY_RECHECK_MS = 30_000;

/**
 * Why a partition's Redis state looks lost from the retry function's side, or `undefined` when it looks whole.
 * Asked only when a retry copy finds its lane free (the rare path): a copy is dropped as stale only when the state
 * it was judged against is whole: no `meta` at all, counters that disagree with the data, or a recovery under way
 * make the copy wait for the committer's next run, which recovers the partition. A state made again since a loss
 * (by a later admission) looks whole here; the committer tells it by its generation and recovers the partition
 * from the durable frontier, which lies at or below the copy's origin: the copy's record runs again from there.
 *
 * @example
 * const why = await lossSuspected(redis, originRef); // 'no state' after a flush
 */
export async function lossSuspected(redis: RedisClient, ref: PartitionRef, limits: CallLimits = {}): Promise<string | undefined> {
  const audit = await auditPartition(redis, ref, limits);
  if (audit.recoveringUntil !== undefined && audit.recoveringUntil > Date.now()) return 'a recovery is rebuilding the partition';
  if (!audit.present) return 'no state for the partition';
  if (audit.parked !== audit.parkedInLists) return `${audit.parked} records counted parked, ${audit.parkedInLists} in the park lists`;
  if (audit.openLanes !== audit.lanes) return `${audit.openLanes} lanes counted blocked, ${audit.lanes} in the lanes hash`;
  return undefined;
}
