import type { OriginState, PartitionRef } from '../ports/partition';
import { auditPartition } from './audit';
import { partitionKeys } from './keys';
import { bounded, runScript, type RedisClient } from './scripts';
import type { CallLimits } from '../ports/limits';
import { trackPartitions } from './tracked';

/**
 * The partition's audit and the origin's done bit. Asked on a rare path only: a retry copy that found its lane free.
 *
 * @example
 * const { audit, originDone } = await readOriginState(redis, originRef, 41);
 */
export async function readOriginState(redis: RedisClient, ref: PartitionRef, origin: number, limits: CallLimits = {}): Promise<OriginState> {
  const audit = await auditPartition(redis, ref, limits);
  if (!audit.present || audit.base === undefined || origin < audit.base) return { audit, originDone: undefined };
  const bit = await bounded(redis.getbit(partitionKeys(ref).bits, origin - audit.base), 'GETBIT origin', limits);
  return { audit, originDone: bit === 1 };
}

/**
 * Reports a loss a retry copy found in the partition's `meta`, with its origin (the lowest is kept), so the
 * committer's next run recovers the partition even when its own checks see nothing (writes lost after its last
 * commit), from that origin when a commit made before any marker existed passed it. The tracked set may be gone with
 * the rest: the partition is added again, so the committer finds it.
 */
export async function reportLoss(redis: RedisClient, ref: PartitionRef, { origin, nowMs }: { readonly origin: number; readonly nowMs: number }, limits: CallLimits = {}): Promise<void> {
  await runScript(redis, 'reportLoss', { keys: [partitionKeys(ref).meta], argv: [String(nowMs), String(origin)] }, limits);
  await trackPartitions(redis, [ref], limits);
}
