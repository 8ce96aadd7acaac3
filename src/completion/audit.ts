import { parkKey, partitionKeys } from './keys';
import { bounded, runScript, type CallLimits, type RedisClient } from './scripts';
import { UnexpectedReplyError } from './errors';
import type { PartitionRef } from './types';

/** What `audit-2.lua` read of one partition (see there). */
export interface PartitionAudit {
  /** Whether the partition's `meta` holds a `base`: some state exists. */
  readonly present: boolean;
  readonly base: number | undefined;
  readonly highest: number | undefined;
  /** The generation stamped when the state was last made whole (`undefined`: never stamped). */
  readonly generation: string | undefined;
  /** Records the `parked` counter says are parked. */
  readonly parked: number;
  /** Records the park lists of the blocked lanes hold. */
  readonly parkedInLists: number;
  /** Entries in the lanes hash. */
  readonly lanes: number;
  /** Lanes blocked and not freed, by the counters. */
  readonly openLanes: number;
  /** The lowest head offset of a blocked lane: nothing at or above it may count as done for the durable group. */
  readonly lowestHead: number | undefined;
  /** Set while a recovery rebuilds the partition: when its fence ends (epoch ms). */
  readonly recoveringUntil: number | undefined;
  /** How many recoveries the partition has had. */
  readonly recoveries: number;
  /** When a retry copy reported the state lost (epoch ms), until a recovery rebuilds it. */
  readonly lossReported?: number | undefined;
  /** The earliest due time (epoch ms) of a retrying lane head without a lease. */
  readonly oldestDueAtMs?: number | undefined;
  /**
   * Where the state was born: the first offset it admitted, or, after a recovery, the lowest offset the completion
   * group's commits vouch for. Never moved by trimming (`base` is). `undefined`: a state of an older version.
   */
  readonly born?: number | undefined;
  /** The lowest origin a retry copy reported lost, until a recovery rebuilds the state. */
  readonly lossReportedFrom?: number | undefined;
  /**
   * The generation the completion group's marker is known to name (set by the committer once its marker landed,
   * `set-marked-1.lua`); `undefined` until then: the partition's first minute, when a lane held by the `hold`
   * policy keeps a watch copy in the retry path.
   */
  readonly marked?: string | undefined;
}

function optionalNumber(value: unknown): number | undefined {
  return value === '' || value === undefined || value === null ? undefined : Number(value);
}

/**
 * Audits a partition's Redis state in one read-only script call (two when a lane got blocked between the
 * listing of the lanes and the audit).
 *
 * @example
 * const audit = await auditPartition(redis, { group: 'orders', topic: 'orders', partition: 0 });
 * if (audit.parked !== audit.parkedInLists) logger.error('a park list was lost', { audit });
 */
export async function auditPartition(redis: RedisClient, ref: PartitionRef, limits: CallLimits = {}): Promise<PartitionAudit> {
  const keys = partitionKeys(ref);
  for (let round = 0; round < 3; round += 1) {
    const lanes = await bounded(redis.hkeys(keys.lanes), 'HKEYS lanes', limits);
    const reply = await runScript(redis, 'audit', { keys: [keys.meta, keys.lanes, ...lanes.map((lane) => parkKey(ref, lane))], argv: lanes }, limits);
    if (!Array.isArray(reply) || reply.length !== 16) throw new UnexpectedReplyError(`audit ${ref.topic}-${ref.partition}: unexpected reply`);
    const [base, highest, generation, parked, parkedInLists, count, open, lowest, recovering, recoveries, unlisted, reported, oldestDue, born, reportedFrom, marked] = reply.map(String);
    if (Number(unlisted) > 0) continue;
    return {
      present: base !== '',
      base: optionalNumber(base),
      highest: optionalNumber(highest),
      generation: generation === '' ? undefined : generation,
      parked: Number(parked || 0),
      parkedInLists: Number(parkedInLists),
      lanes: Number(count),
      openLanes: Number(open),
      lowestHead: optionalNumber(lowest),
      recoveringUntil: optionalNumber(recovering),
      recoveries: Number(recoveries || 0),
      lossReported: optionalNumber(reported),
      oldestDueAtMs: optionalNumber(oldestDue),
      born: optionalNumber(born),
      lossReportedFrom: optionalNumber(reportedFrom),
      marked: marked === '' ? undefined : marked,
    };
  }
  throw new UnexpectedReplyError(`audit ${ref.topic}-${ref.partition}: lanes kept turning blocked while auditing`);
}
