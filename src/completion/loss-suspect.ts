import { partitionKeys } from './keys';
import { trackPartitions } from './tracked';
import { bounded, runScript, type CallLimits, type RedisClient } from './scripts';
import type { PartitionRef } from './types';
import { auditPartition } from './audit';

/** A retry copy held for a suspected loss comes back to look again after this long (a committer run is due by then). */
export const RECOVERY_RECHECK_MS = 30_000;

/**
 * Why a partition's Redis state looks lost, judged by a retry copy whose lane is free, or `undefined` when the copy
 * is simply stale. Asked on that rare path only. A keyed copy's lane leaves the lanes hash only through a release,
 * which sets the head's done bit in the same step; so a free lane with the origin unknown to Redis (above its
 * highest admitted offset) or not done says Redis lost writes, as do no state at all, counters that disagree with
 * the data, or a recovery under way. So does an origin below where the state was born (`born`): only an earlier
 * state admitted it, and a state is replaced only by a recovery (born no higher than the lowest offset the
 * completion group vouches for, so a copy below that is terminal and never gets here) or by a loss. A loss found
 * here is reported in the partition's `meta` with the origin, so the committer's next run recovers the partition
 * even when its own checks see nothing (writes lost after its last commit), from that origin when a commit made
 * before any marker existed passed it.
 *
 * @example
 * const why = await lossSuspected(redis, originRef, 41); // 'offset 41 is above the highest admitted, 39'
 */
export async function lossSuspected(redis: RedisClient, ref: PartitionRef, origin: number, limits: CallLimits = {}, nowMs = Date.now()): Promise<string | undefined> {
  const audit = await auditPartition(redis, ref, limits);
  if (audit.recoveringUntil !== undefined && audit.recoveringUntil > nowMs) return 'a recovery is rebuilding the partition';
  let why: string | undefined;
  if (!audit.present) why = 'no state for the partition';
  else if (audit.born !== undefined && origin < audit.born) why = `offset ${origin} is below where the state was born, ${audit.born}: an earlier state admitted it and was lost`;
  else if (audit.highest !== undefined && origin > audit.highest) why = `offset ${origin} is above the highest admitted, ${audit.highest}`;
  else if (audit.parked !== audit.parkedInLists) why = `${audit.parked} records counted parked, ${audit.parkedInLists} in the park lists`;
  else if (audit.openLanes !== audit.lanes) why = `${audit.openLanes} lanes counted blocked, ${audit.lanes} in the lanes hash`;
  else if (audit.base !== undefined && origin >= audit.base) {
    const bit = await bounded(redis.getbit(partitionKeys(ref).bits, origin - audit.base), 'GETBIT origin', limits);
    if (bit === 0) why = `offset ${origin} is not done while its lane is free`;
  }
  if (why === undefined) return undefined;
  const keys = partitionKeys(ref);
  await runScript(redis, 'rebuild', { keys: [keys.bits, keys.meta, keys.lanes], argv: ['report', String(nowMs), String(origin)] }, limits);
  // The tracked set may be gone with the rest: the committer must find the partition to recover it.
  await trackPartitions(redis, [ref], limits);
  return why;
}
