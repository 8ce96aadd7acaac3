import type { PartitionAudit, PartitionRef } from '../ports/partition';
import { parkKey, partitionKeys } from './keys';
import { bounded, runScript, type RedisClient } from './scripts';
import type { CallLimits } from '../ports/limits';
import { UnexpectedReplyError } from './errors';

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
