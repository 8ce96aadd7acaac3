import type { CommitLease, OffsetCommitter } from './offset-committer';
import { METRIC, MetricUnit, type Telemetry } from '../telemetry';
import type { PartitionCheck } from './durable-moves';
import type { LossReason } from '../durability/loss';
import { recoveryStart } from '../durability/first-minute';
import { encodeMarker } from '../durability/marker';
import { recoverPartition, type Recovered, type RecoveryParts } from '../recovery/recover';

/** What a committer run does about a lost partition: recover it with these parts, log and count on `telemetry`. */
export interface LossRecovery {
  readonly parts: RecoveryParts;
  readonly telemetry?: Telemetry;
}

/** A partition found lost in a committer run, and its recovery (or why there was none). */
export interface RecoveryOutcome {
  readonly topic: string;
  readonly partition: number;
  readonly reason: LossReason;
  readonly detail: string;
  /** The durable frontier: records from here on run again. */
  readonly committed: number | undefined;
  /**
   * Set when a retry copy proved the committer's first commit (made before any marker existed) passed records that
   * were not terminal: the completion group was moved back to this offset, and the records run again from it.
   */
  readonly rewoundTo?: number;
  readonly recovered?: Recovered;
  /** Why the recovery failed; the next run finds the loss again and retries. */
  readonly error?: string;
}

/**
 * Logs each loss as an error naming what it affected, counts it (`RedisStateLost`), and recovers the partition
 * when `recovery` is given (`PartitionsRecovered`). A failed recovery is logged and left to the next run: the
 * loss is still there to be found, and nothing was committed past it.
 */
export async function recoverLost(
  lost: readonly PartitionCheck[],
  recovery: LossRecovery | undefined,
  lease: CommitLease,
  committer: Pick<OffsetCommitter, 'commit'>,
): Promise<RecoveryOutcome[]> {
  const outcomes: RecoveryOutcome[] = [];
  const logger = recovery?.telemetry?.logger;
  for (const check of lost) {
    const { ref, loss, durable } = check;
    if (loss === undefined) continue;
    const start = recoveryStart(durable, check.audit.lossReportedFrom);
    const base = { topic: ref.topic, partition: ref.partition, reason: loss.reason, detail: loss.detail, committed: durable.committed };
    logger?.error('Redis lost part of the completion state of a partition: its records from the durable frontier on will be found again in Kafka and run again', {
      ...base, affected: `${ref.topic}-${ref.partition} from offset ${String(start.from ?? 'the earliest')}`, recovering: recovery !== undefined,
    });
    if (recovery === undefined) {
      outcomes.push(base);
      continue;
    }
    try {
      await lease.renew();
      const { recovered, rewoundTo } = await recoverPartition({
        parts: recovery.parts, ref, durable, start, delivered: check.delivered,
        commit: async ({ marker, ...move }) => {
          await committer.commit([{ topic: ref.topic, partition: ref.partition, ...move, metadata: encodeMarker(marker) }], lease);
          if (move.rewind === true) {
            logger?.error('a commit made before the partition had a durable marker passed records that were not terminal: the completion group was moved back', {
              ...base, rewoundTo: move.to,
            });
          }
        },
      });
      logger?.warn('partition recovered from Kafka: its records go through the retry path again, in order per lane', { ...recovered });
      outcomes.push({ ...base, recovered, ...(rewoundTo === undefined ? {} : { rewoundTo }) });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      logger?.error('recovery of a partition failed; the next committer run tries again', { ...base, error: message });
      outcomes.push({ ...base, error: message });
    }
  }
  if (recovery?.telemetry !== undefined) {
    const { metrics } = recovery.telemetry;
    metrics.addMetric(METRIC.stateLost, MetricUnit.Count, outcomes.length);
    metrics.addMetric(METRIC.recovered, MetricUnit.Count, outcomes.filter((o) => o.recovered !== undefined).length);
    metrics.publishStoredMetrics();
  }
  return outcomes;
}
