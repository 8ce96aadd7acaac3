import { partitionId, parseCommittedOffset } from './plan';
import type { CommitMove, CommittedOffset } from './types';

/**
 * One way of committing offsets to a Kafka consumer group. Implementations write exactly the moves they
 * are given; they do not compare-and-set (Kafka cannot), so the caller serializes runs and plans each
 * run's moves against offsets fetched inside that serialization (see `runCommitter`).
 */
export interface OffsetCommitter {
  /** The Kafka consumer group this committer writes. */
  readonly groupId: string;
  /** What the group has committed on every partition of these topics (`undefined`: nothing). */
  fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]>;
  /** Commits forward moves (`to > from`); throws on any other move. */
  commit(moves: readonly CommitMove[]): Promise<void>;
}

/** The reply of kafkajs `admin.fetchOffsets`. */
export type FetchedOffsets = ReadonlyArray<{
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string }>;
}>;

/** Flattens a kafkajs `fetchOffsets` reply; `-1` (nothing committed) becomes `undefined`. */
export function parseFetchedOffsets(fetched: FetchedOffsets): CommittedOffset[] {
  return fetched.flatMap(({ topic, partitions }) =>
    partitions.map(({ partition, offset }) => ({ topic, partition, offset: parseCommittedOffset(offset, { topic, partition }) })),
  );
}

/**
 * Checks that every move goes forward and names each partition once, and groups the moves by topic.
 * A move that is not forward is a programming error: the plan never makes one.
 */
export function movesByTopic(moves: readonly CommitMove[]): Map<string, CommitMove[]> {
  const seen = new Set<string>();
  const byTopic = new Map<string, CommitMove[]>();
  for (const move of moves) {
    const where = `${move.topic}-${move.partition}`;
    if (!Number.isSafeInteger(move.to) || move.to < 0) {
      throw new RangeError(`Expected the move of ${where} to go to a non-negative integer, got ${String(move.to)}`);
    }
    if (move.from !== undefined && !(move.to > move.from)) {
      throw new RangeError(`Expected the move of ${where} to go forward, got ${move.from} -> ${move.to}`);
    }
    const id = partitionId(move);
    if (seen.has(id)) throw new RangeError(`Expected one move per partition, got two for ${where}`);
    seen.add(id);
    const list = byTopic.get(move.topic);
    if (list === undefined) byTopic.set(move.topic, [move]);
    else list.push(move);
  }
  return byTopic;
}
