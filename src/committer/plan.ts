import { describeValue } from '../errors';
import {
  PlanReasonCode,
  type CommitPlan,
  type CommittedOffset,
  type FrontierInput,
  type PreviousReading,
  type TopicPartition,
} from './types';

export interface PlanInput {
  /** The frontier reading of every partition to consider; nothing else is planned. */
  readonly frontiers: readonly FrontierInput[];
  /** What Kafka has committed now; a partition missing here (or at `-1`) has nothing committed. */
  readonly committed: readonly CommittedOffset[];
  /** What the previous run saw; a partition missing here cannot be found stalled yet. */
  readonly previous?: readonly PreviousReading[];
  /** The time of this run (epoch ms): where a new frontier value starts its `sinceMs`. */
  readonly nowMs: number;
}

/** `<topic>\n<partition>`: Kafka topic names cannot hold a newline, so this never collides. */
export function partitionId(tp: TopicPartition): string {
  return `${tp.topic}\n${tp.partition}`;
}

function expectOffset(name: string, value: unknown, where: TopicPartition): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Expected \`${name}\` of ${where.topic}-${where.partition} to be a non-negative integer, got ${describeValue(value)}`,
    );
  }
}

function indexOnce<T extends TopicPartition>(items: readonly T[], what: string): Map<string, T> {
  const byId = new Map<string, T>();
  for (const item of items) {
    const id = partitionId(item);
    if (byId.has(id)) throw new RangeError(`Expected one ${what} per partition, got two for ${item.topic}-${item.partition}`);
    byId.set(id, item);
  }
  return byId;
}

/** Kafka's "nothing committed" (`-1`) and absence become `undefined`. */
function committedValue(entry: CommittedOffset | undefined): number | undefined {
  if (entry?.offset === undefined) return undefined;
  if (!Number.isSafeInteger(entry.offset)) {
    throw new RangeError(
      `Expected the committed offset of ${entry.topic}-${entry.partition} to be an integer, got ${describeValue(entry.offset)}`,
    );
  }
  return entry.offset < 0 ? undefined : entry.offset;
}

/**
 * Plans one committer run: which partitions move to which offset. Pure: no I/O, no clock.
 *
 * A partition moves to its frontier only when the frontier is above what Kafka has committed; a frontier
 * equal to or below it never produces a move, so applying the plan leaves every committed offset at
 * max(committed, frontier) — committed offsets never go backwards (G2). A partition is stalled when its
 * frontier has not moved since the previous run while records above it were delivered (highest >
 * frontier): the record at the frontier is stuck (a hung handler, a lost invocation) and holds up the
 * commit of everything behind it.
 *
 * @example
 * const plan = planCommit({
 *   frontiers: [{ topic: 'orders', partition: 0, reading: { base: 0, highest: 99, frontier: 42 } }],
 *   committed: [{ topic: 'orders', partition: 0, offset: 40 }],
 *   previous: [{ topic: 'orders', partition: 0, frontier: 40, highest: 80, sinceMs: 1_000 }],
 *   nowMs: 61_000,
 * });
 * // plan.moves: [{ topic: 'orders', partition: 0, from: 40, to: 42 }]
 */
export function planCommit(input: PlanInput): CommitPlan {
  if (!Number.isSafeInteger(input.nowMs)) {
    throw new RangeError(`Expected \`nowMs\` to be an integer, got ${describeValue(input.nowMs)}`);
  }
  indexOnce(input.frontiers, 'frontier reading');
  const committed = indexOnce(input.committed, 'committed offset');
  const previous = indexOnce(input.previous ?? [], 'previous reading');

  const plan: CommitPlan = { moves: [], partitions: [], reasons: [], next: [] };
  for (const { topic, partition, reading } of input.frontiers) {
    const tp = { topic, partition };
    const committedBefore = committedValue(committed.get(partitionId(tp)));
    if (reading === undefined) {
      plan.partitions.push({ ...tp, committedBefore, frontier: undefined, highest: undefined, committedAfter: committedBefore, stalled: false, frontierSinceMs: undefined });
      plan.reasons.push({ ...tp, code: PlanReasonCode.NothingAdmitted, detail: 'nothing admitted: no frontier to commit' });
    } else {
      planPartition(plan, { tp, committedBefore, reading, before: previous.get(partitionId(tp)), nowMs: input.nowMs });
    }
  }
  return plan;
}

/** One partition with a frontier, as `planCommit` reads it. */
interface PartitionFacts {
  readonly tp: TopicPartition;
  readonly committedBefore: number | undefined;
  readonly reading: NonNullable<FrontierInput['reading']>;
  /** What the previous run saw of it. */
  readonly before: PreviousReading | undefined;
  readonly nowMs: number;
}

/** Adds one partition to the plan: its move forward or why none, whether it stalled, and what the next run compares. */
function planPartition(plan: CommitPlan, { tp, committedBefore, reading, before, nowMs }: PartitionFacts): void {
  const { frontier, highest } = reading;
  expectOffset('frontier', frontier, tp);
  if (!Number.isSafeInteger(highest) || highest < frontier - 1) {
    throw new RangeError(
      `Expected \`highest\` of ${tp.topic}-${tp.partition} to be an integer of at least frontier - 1 (${frontier - 1}), got ${describeValue(highest)}`,
    );
  }

  if (committedBefore === undefined || frontier > committedBefore) {
    plan.moves.push({ ...tp, from: committedBefore, to: frontier });
  } else if (frontier === committedBefore) {
    plan.reasons.push({ ...tp, code: PlanReasonCode.UpToDate, detail: `committed ${committedBefore} is the frontier` });
  } else {
    plan.reasons.push({ ...tp, code: PlanReasonCode.BehindCommitted, detail: `frontier ${frontier} is below committed ${committedBefore}: not moved back` });
  }

  const sameFrontier = before !== undefined && before.frontier === frontier;
  const frontierSinceMs = sameFrontier ? before.sinceMs : nowMs;
  const stalled = sameFrontier && highest > frontier;
  if (stalled) {
    plan.reasons.push({
      ...tp,
      code: PlanReasonCode.Stalled,
      detail: `frontier ${frontier} has not moved for ${nowMs - frontierSinceMs} ms; highest delivered is ${highest}`,
    });
  }

  const committedAfter = committedBefore === undefined ? frontier : Math.max(committedBefore, frontier);
  plan.partitions.push({ ...tp, committedBefore, frontier, highest, committedAfter, stalled, frontierSinceMs });
  plan.next.push({ ...tp, frontier, highest, sinceMs: frontierSinceMs });
}

/**
 * Parses an offset as kafkajs reports it (a string; `-1` for "none") into a number, `undefined` for none.
 *
 * @example
 * parseCommittedOffset('42'); // 42
 * parseCommittedOffset('-1'); // undefined
 */
export function parseCommittedOffset(raw: string, where: TopicPartition): number | undefined {
  const offset = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isSafeInteger(offset)) {
    throw new RangeError(
      `Expected the committed offset of ${where.topic}-${where.partition} to be an integer, got ${describeValue(raw)}`,
    );
  }
  return offset < 0 ? undefined : offset;
}
