import type { CompletionStore } from '../completion/store';
import type { PartitionRef } from '../ports/partition';
import { decodeParked, handOffHeads, type LaneHeadScope } from '../lanes/lane-heads';
import type { HandOffSink, HandOffItem, HandOffOutcome } from '../ports/handoff';
import { copiesFor } from '../handoff/copies';
import { readHandOffHeaders } from '../handoff/headers';
import type { LanesOptions } from '../options/lanes-options';
import { retryTierOf } from '../options/names';
import { METRIC, MetricUnit, type Telemetry } from '../telemetry';

/** The lease a head gets when a re-drive releases a lane onto it: longer than one re-drive takes. */
export const REDRIVE_LEASE_MS = 60_000;

export interface RedriveOptions {
  readonly store: Pick<CompletionStore, 'trackedPartitions' | 'laneHeads' | 'firstParked'> & LaneHeadScope['store'];
  /** The handler's options: group, tiers and dead-letter policy. */
  readonly options: LanesOptions;
  readonly sink: HandOffSink;
  readonly now?: () => number;
  /** Where the re-drives are logged (one warning each) and counted (`LaneHeadsRedriven`). */
  readonly telemetry?: Telemetry;
}

/** A lane head whose copy was written again from Redis. */
export interface Redriven {
  readonly topic: string;
  readonly partition: number;
  readonly lane: string;
  readonly offset: number;
  readonly attempt: number;
  /** Where the copy went: a retry tier, or the dead-letter topic when the broker refused it for good. */
  readonly outcome: 'retried' | 'dead-lettered';
}

/**
 * The committer's re-drive (docs/ARCHITECTURE.md, "The path of a retry copy"): a lane head carries a lease while its retry copy may not
 * exist (the retry function was running it inline, or writing its copy). A lease that expired means that
 * function is gone: the head's copy is written from the payload kept first in its park list, due when the
 * head says, then the lease is taken off. A duplicate copy is harmless: the head check drops it.
 *
 * @example
 * const redriven = await redriveExpiredLeases({ store, options, sink: writer });
 * if (redriven.length > 0) logger.warn('lane heads re-driven', { redriven });
 */
export async function redriveExpiredLeases(input: RedriveOptions): Promise<Redriven[]> {
  const { store, options, sink } = input;
  const now = input.now ?? Date.now;
  const scope: LaneHeadScope & { store: RedriveOptions['store'] } = {
    options,
    store,
    // A lane released here onto its next head (a refused copy under `release`) leases that head until its own
    // copy is written, so a crash of this run in between is re-driven by the next one.
    leaseUntilMs: now() + REDRIVE_LEASE_MS,
    now,
    write: (items: readonly HandOffItem[]): Promise<readonly HandOffOutcome[]> => sink.write(items),
    copies: copiesFor(options, now),
  };
  const refs = (await store.trackedPartitions(options.group)).filter((ref) => retryTierOf(options.group, ref.topic) === undefined);
  const redriven: Redriven[] = [];
  for (const ref of refs) {
    const heads = await store.laneHeads(ref);
    for (const head of heads) {
      if (head.leaseUntilMs <= 0 || head.leaseUntilMs > now()) continue;
      const outcome = await redriveOne(scope, ref, head.lane, head);
      if (outcome !== undefined) redriven.push({ topic: ref.topic, partition: ref.partition, lane: head.lane, offset: head.offset, attempt: head.attempt, outcome });
    }
  }
  if (input.telemetry !== undefined) {
    const { logger, metrics } = input.telemetry;
    for (const r of redriven) logger.warn('lane head re-driven: its lease expired before its retry copy was known written', { ...r });
    metrics.addMetric(METRIC.redriven, MetricUnit.Count, redriven.length);
    metrics.publishStoredMetrics();
  }
  return redriven;
}

async function redriveOne(
  scope: LaneHeadScope & { store: RedriveOptions['store'] },
  ref: PartitionRef,
  lane: string,
  head: { offset: number; attempt: number; dueAtMs: number },
): Promise<Redriven['outcome'] | undefined> {
  const kept = await scope.store.firstParked(ref, lane);
  if (kept === undefined || kept.offset !== head.offset) return undefined;
  const record = decodeParked(kept.payload);
  const facts = readHandOffHeaders(record.headers);
  const origin = { topic: ref.topic, partition: ref.partition, offset: head.offset };
  const copy = scope.copies.deferred({ record, origin, lane }, head.attempt, head.dueAtMs, facts.firstFailureAtMs);
  const [outcome] = await handOffHeads(scope, ref, [{ lane, head: { offset: head.offset, attempt: head.attempt }, copy, record }]);
  return outcome === 'dead-lettered' ? 'dead-lettered' : 'retried';
}
