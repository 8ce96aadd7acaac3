/**
 * The pure half of a recovery: where it reads and rebuilds (`recoveryRange`), and what it rebuilds from the records
 * read again (`planRebuild`): each lane's first record its head, the rest parked behind it in offset order, the
 * records without a lane on their own, in chunks of at most `REBUILD_CHUNK` records per script call.
 */
import type { RebuildChunk, RebuildRecord } from '../completion/args';
import type { KafkaRecord } from '../event';
import { parkPayload } from '../lanes/lane-heads';

/** Records per rebuild call: one script call stays short, whatever the range. */
export const REBUILD_CHUNK = 1_000;

/** What a recovery reads and rebuilds of one partition. */
export interface RecoveryRange {
  /** The first offset read again and the rebuilt state's `base`. */
  readonly start: number;
  /** The rebuilt state's highest admitted offset. */
  readonly highest: number;
  /** Where the rebuilt state is born (`born` in `meta`). */
  readonly born: number;
  /** Whether records are read at all: a retry topic's partition holds no lanes, its state restarts empty. */
  readonly read: boolean;
}

/**
 * Pure: the range of a recovery. It starts at the durable frontier `from`, or at the earliest offset the log holds
 * (`low`) when nothing was committed, or when `from` lies beyond the end (the topic was deleted and made again: its
 * records are all new). A source partition is rebuilt up to its end; a retry topic's, which holds no lanes, up to
 * where its event source committed (`delivered`, within the range), every copy below it handled. The state is born at
 * `since` (the lowest offset the commits vouch for) or at `start`, the lower.
 *
 * @example
 * recoveryRange({ from: 20, low: 0, end: 40, retryTopic: false }); // { start: 20, highest: 39, born: 20, read: true }
 */
export function recoveryRange(at: {
  readonly from: number | undefined;
  readonly low: number;
  readonly end: number;
  readonly retryTopic: boolean;
  readonly delivered?: number | undefined;
  readonly since?: number | undefined;
}): RecoveryRange {
  const { from, low, end, retryTopic, delivered, since } = at;
  const start = from === undefined || from > end ? low : Math.max(from, low);
  const highest = retryTopic ? Math.max(start, Math.min(delivered ?? start, end)) - 1 : end - 1;
  return { start, highest, born: since === undefined ? start : Math.min(since, start), read: !retryTopic };
}

/** What a recovery rebuilds from the records it read. */
export interface RebuildPlan {
  /** Lanes rebuilt. */
  readonly lanes: number;
  /** Each lane's first record: its head once rebuilt, in the order the lanes were first met. */
  readonly heads: ReadonlyMap<string, KafkaRecord>;
  /** Records without a lane: written to the first retry tier at once. */
  readonly independent: readonly KafkaRecord[];
  /** The rebuild calls, in offset order, covering `[range.start, range.highest]` whole. */
  readonly chunks: readonly RebuildChunk[];
}

/**
 * Pure: what to rebuild from `records` (in offset order, within the range). `laneOf` derives a record's lane as the
 * source path does (`undefined`: none). The last chunk reaches `highest`; offsets after the last record Kafka still has
 * (transaction markers) are done, in a chunk of no records when no record is left to carry them.
 *
 * @example
 * const plan = planRebuild(records, { start: 20, highest: 39 }, (record) => laneIdOf(record, options));
 * // plan.heads: each lane's first record; plan.chunks: one call per 1,000 records
 */
export function planRebuild(
  records: readonly KafkaRecord[],
  range: Pick<RecoveryRange, 'start' | 'highest'>,
  laneOf: (record: KafkaRecord) => string | undefined,
  chunkSize = REBUILD_CHUNK,
): RebuildPlan {
  const lanes = new Set<string>();
  const heads = new Map<string, KafkaRecord>();
  const independent: KafkaRecord[] = [];
  const chunks: RebuildChunk[] = [];
  let covered = range.start - 1;
  for (let i = 0; i < records.length; i += chunkSize) {
    const chunk = records.slice(i, i + chunkSize);
    const chunkLanes: string[] = [];
    const index = new Map<string, number>();
    const rebuilt: RebuildRecord[] = [];
    for (const record of chunk) {
      const lane = laneOf(record);
      if (lane === undefined) {
        independent.push(record);
        rebuilt.push({ offset: record.offset, lane: 0, payload: '' });
        continue;
      }
      lanes.add(lane);
      if (!heads.has(lane)) heads.set(lane, record);
      let place = index.get(lane);
      if (place === undefined) {
        chunkLanes.push(lane);
        place = chunkLanes.length;
        index.set(lane, place);
      }
      rebuilt.push({ offset: record.offset, lane: place, payload: parkPayload(record) });
    }
    const to = i + chunkSize >= records.length ? range.highest : chunk[chunk.length - 1]!.offset;
    chunks.push({ from: covered + 1, to, lanes: chunkLanes, records: rebuilt });
    covered = to;
  }
  if (covered < range.highest) chunks.push({ from: covered + 1, to: range.highest, lanes: [], records: [] });
  return { lanes: lanes.size, heads, independent, chunks };
}
