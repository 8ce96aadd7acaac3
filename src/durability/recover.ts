import type { Kafka } from 'kafkajs';
import { trackPartitions } from '../completion/tracked';
import type { RedisClient } from '../completion/scripts';
import { PartitionRebuild } from '../completion/rebuild';
import type { PartitionRef } from '../ports/partition';
import { CompletionStore } from '../completion/store';
import { parkPayload } from '../lanes/lane-heads';
import type { HandOffSink } from '../ports/handoff';
import type { KafkaRecord } from '../event';
import { NotHeadError, StaleAttemptError } from '../completion/errors';
import { copiesFor } from '../handoff/copies';
import type { LanesOptions } from '../options/lanes-options';
import { retryTierOf } from '../options/names';
import { laneIdOf } from '../lanes/lane-id';
import { newGeneration } from './marker';
import { kafkaRecordLog, type RecordLog } from './read-range';

/** How long `admit` refuses a partition's records while it is rebuilt; a recovery that dies lifts it by expiry. */
export const RECOVERY_FENCE_MS = 5 * 60_000;
/** Records per rebuild call: one script call stays short, whatever the range. */
export const REBUILD_CHUNK = 1_000;

interface RecoveryBase {
  readonly redis: RedisClient;
  /** The handler's options: group, ordering (lanes are derived as the source path derives them), retry tiers. */
  readonly options: LanesOptions;
  /** Where independent records (no lane) are handed off to the retry path. */
  readonly sink: HandOffSink;
  readonly now?: () => number;
}

/** What a recovery needs: Redis, the handler's options, a sink, and where the records are read again (Kafka, or a `RecordLog`). */
export type RecoveryParts = RecoveryBase & ({ readonly kafka: Kafka } | { readonly log: RecordLog });

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

/**
 * Recovers a partition whose Redis state was lost (docs/durability.md): every record between the durable
 * frontier `from` (what the completion group committed) and the end of the partition is read again from Kafka
 * and goes to the retry path again, in order per lane: the first record of each lane becomes its head (its
 * retry copy, due at once, is written by the recovery itself once the state is rebuilt; a copy not written is left
 * to the committer's re-drive, `redriveExpiredLeases`), the lane's later
 * records are parked behind it, and records without a lane are written to the first retry tier. While the
 * partition is rebuilt its fence makes `admit` refuse new records (the event source redelivers them), so none
 * runs ahead of a recovered one. Records that were terminal already run again: at-least-once.
 *
 * A retry topic's partition holds no lanes: its state restarts at the durable frontier (its copies' own offsets
 * below it were committed, so handled; the ones above come back through the event source or the bridge), with
 * every offset below `delivered` (where its event source mapping committed, when known) done: those copies were
 * handled before their invocation returned.
 *
 * The rebuilt state is born (`born` in `meta`) at `since`, the lowest offset the completion group's commits vouch
 * for (the marker's), or at the recovery's start when that is lower or `since` unknown: a retry copy of an origin
 * below it then tells a loss, one at or above it and below the durable frontier is stale (docs/durability.md).
 *
 * @example
 * const done = await recoverPartition(parts, { group: 'orders', topic: 'orders', partition: 0 }, 20, 'a1b2c3d4e5f6');
 * // done.records === 20: offsets 20..39 were read again and handed to the retry path
 */
export async function recoverPartition(
  parts: RecoveryParts,
  ref: PartitionRef,
  from: number | undefined,
  generation: string = newGeneration(),
  delivered?: number,
  since?: number,
): Promise<Recovered> {
  const { redis, options } = parts;
  const log = 'log' in parts ? parts.log : kafkaRecordLog(parts.kafka, ref.group);
  const now = parts.now ?? Date.now;
  const rebuild = new PartitionRebuild(redis, ref);

  // The fence first: from here no record of the partition is admitted, so the end read next bounds every record
  // the event source delivered before the rebuild.
  await rebuild.fence(now() + RECOVERY_FENCE_MS);
  const { low, end } = await log.offsets(ref.topic, ref.partition);
  // A durable frontier beyond the end of the partition: the topic was deleted and created again (`kafka-lanes reset`
  // removed its state): its records are all new, read from the start.
  const start = from === undefined || from > end ? low : Math.max(from, low);
  const isRetryTopic = retryTierOf(options.group, ref.topic) !== undefined;
  const records = isRetryTopic ? [] : await log.read(ref.topic, ref.partition, start, end);

  const highest = isRetryTopic ? Math.max(start, Math.min(delivered ?? start, end)) - 1 : end - 1;
  const born = since === undefined ? start : Math.min(since, start);
  await rebuild.begin(start, highest, now() + RECOVERY_FENCE_MS, born);

  const laneOf = (record: KafkaRecord): string | undefined => {
    try {
      return laneIdOf(record, options);
    } catch {
      // A key `keyOf` cannot read runs on its own, as the source path dead-letters it on its own.
      return undefined;
    }
  };
  const lanes = new Set<string>();
  /** Each lane's first record: its head once rebuilt. */
  const heads = new Map<string, KafkaRecord>();
  const independent: KafkaRecord[] = [];
  let covered = start - 1;
  for (let i = 0; i < records.length; i += REBUILD_CHUNK) {
    const chunk = records.slice(i, i + REBUILD_CHUNK);
    const last = i + REBUILD_CHUNK >= records.length;
    const chunkLanes: string[] = [];
    const index = new Map<string, number>();
    const triples: string[] = [];
    for (const record of chunk) {
      const lane = laneOf(record);
      if (lane === undefined) {
        independent.push(record);
        triples.push(String(record.offset), '0', '');
        continue;
      }
      lanes.add(lane);
      if (!heads.has(lane)) heads.set(lane, record);
      let j = index.get(lane);
      if (j === undefined) {
        chunkLanes.push(lane);
        j = chunkLanes.length;
        index.set(lane, j);
      }
      triples.push(String(record.offset), String(j), parkPayload(record));
    }
    const to = last ? highest : chunk[chunk.length - 1]!.offset;
    await rebuild.records(now(), covered + 1, to, chunkLanes, triples);
    covered = to;
  }
  if (covered < highest) {
    // Offsets after the last record Kafka still has (markers): nothing to hand off, done.
    await rebuild.records(now(), covered + 1, highest, [], []);
  }

  if (independent.length > 0) {
    const at = now();
    const copies = copiesFor(options, now);
    const items = independent.map((record) => copies.deferred({ record, origin: { topic: ref.topic, partition: ref.partition, offset: record.offset } }, 1, at));
    await parts.sink.write(items);
    await new CompletionStore(redis).markDone(ref, independent.map((record) => record.offset));
  }
  await rebuild.end(generation);
  // The tracked set may have been lost with the rest: the committer and the re-drive find the partition again.
  await trackPartitions(redis, [ref]);
  const handedOff = await handOffHeads(parts, ref, heads);
  return {
    topic: ref.topic,
    partition: ref.partition,
    from: start,
    to: end,
    records: records.length,
    lanes: lanes.size,
    independent: independent.length,
    heads: handedOff,
    generation,
  };
}

/**
 * The recovered lane heads' retry copies, due at once, written by the recovery itself: the recovery is decided, so
 * nothing waits for a later re-drive (or a committer run without one). Each head's lease (already expired) is taken
 * off once its copy is written; a head whose copy was not written (the broker refused it, or this run dies first)
 * keeps it, and the committer's re-drive writes that copy (dead-lettering a refused one under the lane's policy).
 */
async function handOffHeads(parts: RecoveryParts, ref: PartitionRef, heads: ReadonlyMap<string, KafkaRecord>): Promise<number> {
  if (heads.size === 0) return 0;
  const now = parts.now ?? Date.now;
  const copies = copiesFor(parts.options, now);
  const at = now();
  const list = [...heads].map(([lane, record]) => ({ lane, record, item: copies.deferred({ record, origin: { topic: ref.topic, partition: ref.partition, offset: record.offset }, lane }, 1, at) }));
  const outcomes = await parts.sink.write(list.map((head) => head.item));
  const store = new CompletionStore(parts.redis);
  const written = list.filter((_, i) => outcomes[i]?.status === 'written');
  await Promise.all(written.map(async ({ lane, record, item }) => {
    await store.advance(ref, lane, { offset: record.offset, attempt: 1 }, { attempt: 1, state: 'retrying', dueAtMs: item.dueAtMs, leaseUntilMs: 0 }).catch((error: unknown) => {
      // Its copy ran already and moved the lane on: the lease went with the old head.
      if (!(error instanceof NotHeadError || error instanceof StaleAttemptError)) throw error;
    });
  }));
  return written.length;
}
