/**
 * The one recovery of a partition whose Redis state was lost (docs/durability.md), used by the committer
 * (`committer/after-loss.ts`) and by `kafka-lanes recover`: from where `recoveryStart` says, a rewind of the
 * completion group when a retry copy proved a commit false, the rebuild from the records read again, and the first
 * marker of a partition nothing was committed for.
 */
import type { Kafka } from 'kafkajs';
import type { CompletionStore } from '../completion/store';
import type { RecoveryStart } from '../durability/first-minute';
import { newGeneration, type DurableMarker, type DurableView } from '../durability/marker';
import type { KafkaRecord } from '../event';
import { copiesFor } from '../handoff/copies';
import { handOffHeads, type HeadMoveScope } from '../lanes/lane-heads';
import { laneIdOf } from '../lanes/lane-id';
import type { LanesOptions } from '../options/lanes-options';
import { retryTierOf } from '../options/names';
import type { HandOffSink } from '../ports/handoff';
import type { PartitionRef } from '../ports/partition';
import { planRebuild, recoveryRange } from './plan';
import { kafkaRecordLog, type RecordLog } from './read-range';

/** How long `admit` refuses a partition's records while it is rebuilt; a recovery that dies lifts it by expiry. */
export const RECOVERY_FENCE_MS = 5 * 60_000;

interface RecoveryBase {
  /** The handler's options: group, ordering (lanes are derived as the source path derives them), retry tiers. */
  readonly options: LanesOptions;
  /** Where independent records (no lane) and the heads' copies are handed off to the retry path. */
  readonly sink: HandOffSink;
  readonly now?: () => number;
}

/**
 * What a recovery asks of the completion state, injected: the rebuild door of a partition (its steps, one script each,
 * and the tracked set), done bits, and a head's moves (its lease off once its copy is written). `CompletionStore` is it.
 */
export type RecoveryStore = Pick<CompletionStore, 'rebuild' | 'markDone' | 'advance' | 'release' | 'durablyMarked'>;

/** What a recovery needs: the completion store, the handler's options, a sink, and where the records are read again (Kafka, or a `RecordLog`). */
export type RecoveryParts = RecoveryBase & { readonly store: RecoveryStore } & ({ readonly kafka: Kafka } | { readonly log: RecordLog });

/** What one recovery did. */
export interface Recovered {
  readonly topic: string;
  readonly partition: number;
  /** The durable frontier the records were read again from. */
  readonly from: number;
  /** The end of the partition when the recovery started (exclusive). */
  readonly to: number;
  /** Records found again in Kafka and handed to the retry path (lane heads and independent records) or parked. */
  readonly records: number;
  /** Lanes rebuilt: each one's first record is its head, the rest parked behind it, in offset order. */
  readonly lanes: number;
  /** Records without a lane, written to the first retry tier at once. */
  readonly independent: number;
  /** Lane heads whose retry copies the recovery wrote, due at once (the rest are left to the re-drive). */
  readonly heads: number;
  /** The generation the partition carries now. */
  readonly generation: string;
}

/** One partition to rebuild from `from` (the durable frontier; `undefined`: the earliest offset). */
export interface RebuildOptions {
  readonly parts: RecoveryParts;
  readonly ref: PartitionRef;
  readonly from: number | undefined;
  /** The generation the rebuilt state carries (default: a new one). */
  readonly generation?: string | undefined;
  /** Where the partition's event source committed, when known (a retry topic's state restarts below it, done). */
  readonly delivered?: number | undefined;
  /** The lowest offset the completion group's commits vouch for, when known. */
  readonly since?: number | undefined;
}

/**
 * Rebuilds a partition from Kafka: every record between the durable frontier `from` and the end of the partition is
 * read again and goes to the retry path again, in order per lane: the first record of each lane becomes its head (its
 * retry copy, due at once, is written by the recovery itself once the state is rebuilt, and its lease taken off,
 * `handOffHeads`; a copy not written is left to the committer's re-drive), the lane's later records are parked behind
 * it, and records without a lane are written to the first retry tier. While the partition is rebuilt its fence makes
 * `admit` refuse new records (the event source redelivers them), so none runs ahead of a recovered one. Records that
 * were terminal already run again: at-least-once. A retry topic's partition holds no lanes (see `recoveryRange`).
 *
 * @example
 * const done = await rebuildPartition({ parts, ref: { group: 'orders', topic: 'orders', partition: 0 }, from: 20 });
 * // done.records === 20: offsets 20..39 were read again and handed to the retry path
 */
export async function rebuildPartition(rebuildOptions: RebuildOptions): Promise<Recovered> {
  const { parts, ref } = rebuildOptions;
  const { options } = parts;
  const { store } = parts;
  const log = 'log' in parts ? parts.log : kafkaRecordLog(parts.kafka, ref.group);
  const now = parts.now ?? Date.now;
  const generation = rebuildOptions.generation ?? newGeneration();
  const rebuild = store.rebuild(ref);

  // The fence first: from here no record of the partition is admitted, so the end read next bounds every record
  // the event source delivered before the rebuild.
  await rebuild.fence(now() + RECOVERY_FENCE_MS);
  const { low, end } = await log.offsets(ref.topic, ref.partition);
  const range = recoveryRange({ ...rebuildOptions, low, end, retryTopic: retryTierOf(options.group, ref.topic) !== undefined });
  const records = range.read ? await log.read(ref.topic, ref.partition, range.start, end) : [];
  await rebuild.begin(range.start, range.highest, now() + RECOVERY_FENCE_MS, range.born);

  const plan = planRebuild(records, range, (record) => {
    try {
      return laneIdOf(record, options);
    } catch {
      // A key `keyOf` cannot read runs on its own, as the source path dead-letters it on its own.
      return undefined;
    }
  });
  for (const chunk of plan.chunks) await rebuild.records(chunk, now());

  const origin = (record: KafkaRecord): { topic: string; partition: number; offset: number } => ({ topic: ref.topic, partition: ref.partition, offset: record.offset });
  if (plan.independent.length > 0) {
    const at = now();
    const copies = copiesFor(options, now);
    await parts.sink.write(plan.independent.map((record) => copies.deferred({ record, origin: origin(record) }, 1, at)));
    await store.markDone(ref, plan.independent.map((record) => record.offset));
  }
  await rebuild.end(generation);
  // The tracked set may have been lost with the rest: the committer and the re-drive find the partition again.
  await rebuild.track();
  // The heads' copies, due at once, written by the recovery itself: nothing waits for a later re-drive. A head whose
  // copy was not written (refused, or this run dies first) keeps its expired lease: the re-drive writes it.
  const copies = copiesFor(options, now);
  const at = now();
  const scope: HeadMoveScope = { options, store, leaseUntilMs: 0, copies, now, write: (items) => parts.sink.write(items) };
  const handedOff = await handOffHeads(scope, ref, [...plan.heads].map(([lane, record]) => ({
    lane, record, head: { offset: record.offset, attempt: 1 }, copy: copies.deferred({ record, origin: origin(record), lane }, 1, at),
  })), 'leave');
  return {
    topic: ref.topic,
    partition: ref.partition,
    from: range.start,
    to: end,
    records: records.length,
    lanes: plan.lanes,
    independent: plan.independent.length,
    heads: handedOff.filter((outcome) => outcome === 'retried').length,
    generation,
  };
}

/** A commit to the completion group, made by the committer under its lease, with the marker it carries. */
export interface RecoveryCommit {
  readonly from: number | undefined;
  readonly to: number;
  readonly marker: DurableMarker;
  /** The one move backwards (a rewind). */
  readonly rewind?: true;
}

/** A lost partition to recover. */
export interface RecoverOptions {
  readonly parts: RecoveryParts;
  readonly ref: PartitionRef;
  /** What the completion group holds for the partition. */
  readonly durable: DurableView;
  /** Where it starts (`recoveryStart`: the durable frontier, or a reported origin below the marker's `since`). */
  readonly start: RecoveryStart;
  /** Where the partition's event source committed, when known. */
  readonly delivered?: number | undefined;
  /**
   * Commits to the completion group under the committer's lease: the rewind before the rebuild, and the first marker
   * of a partition nothing was committed for after it. Without it neither is made (a committer run commits next).
   */
  readonly commit?: (move: RecoveryCommit) => Promise<void>;
}

/** What `recoverPartition` did: the rebuild, and the offset the completion group was moved back to, if it was. */
export interface RecoveryResult {
  readonly recovered: Recovered;
  readonly rewoundTo?: number;
}

/**
 * Recovers a lost partition from `start`: the durable frontier, or, when a retry copy reported an origin below the
 * marker's `since`, that origin, after committing the completion group back there (with the marker, before the rebuild:
 * a loss during the recovery still finds those records). With nothing committed at all the rebuilt state's marker is
 * committed at once at the recovery's start (Kafka holds nothing below it), so a loss before the next run is found
 * against it, not taken for a new state.
 *
 * @example
 * const durable = { committed: 20, marker };
 * const { recovered } = await recoverPartition({ parts, ref, durable, start: recoveryStart(durable, undefined) });
 */
export async function recoverPartition(recovery: RecoverOptions): Promise<RecoveryResult> {
  const { parts, ref, durable, commit } = recovery;
  const { start } = recovery;
  const { marker } = durable;
  const rewind = start.rewindTo;
  if (rewind !== undefined && marker !== undefined && commit !== undefined) {
    await commit({ from: durable.committed, to: rewind, marker: { ...marker, since: rewind }, rewind: true });
  }
  const recovered = await rebuildPartition({
    parts, ref, from: rewind ?? durable.committed, generation: marker?.generation, delivered: recovery.delivered, since: rewind ?? start.since,
  });
  if (durable.committed === undefined && commit !== undefined) {
    await commit({ from: undefined, to: recovered.from, marker: { generation: recovered.generation, highest: recovered.from - 1, since: recovered.from } });
  }
  return { recovered, ...(rewind === undefined ? {} : { rewoundTo: rewind }) };
}
