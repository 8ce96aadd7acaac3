import type { PartitionWindow } from '../ports/partition';

/** One partition of one topic, without its group: the unit Kafka commits. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** A partition's frontier reading now (`undefined`: nothing was ever admitted on it). */
export interface FrontierInput extends TopicPartition {
  readonly reading: PartitionWindow | undefined;
}

/**
 * The offset a Kafka group has committed on a partition. Kafka reports "none" as `-1`; `undefined` and
 * any negative offset mean the same here.
 */
export interface CommittedOffset extends TopicPartition {
  readonly offset: number | undefined;
  /** The commit's metadata, where the committer keeps its durable marker (docs/durability.md). */
  readonly metadata?: string | undefined;
}

/**
 * What the previous committer run saw on a partition: the frontier, the highest delivered offset, and
 * since when (epoch ms) the frontier has had this value. Kept by the committer between runs so a stall
 * is found without memory of its own.
 */
export interface PreviousReading extends TopicPartition {
  readonly frontier: number;
  readonly highest: number;
  readonly sinceMs: number;
}

/** One forward move of a committed offset: `from` is what Kafka had (`undefined`: nothing), `to > from`. */
export interface CommitMove extends TopicPartition {
  readonly from: number | undefined;
  readonly to: number;
  /**
   * The commit metadata to write with the offset (the durable marker). A move that only writes a new marker
   * keeps the offset: `to === from` is allowed then.
   */
  readonly metadata?: string | undefined;
  /**
   * A move backwards (`to < from`): made only by a recovery that a retry copy proved a commit untrue (the
   * committer's first commit of a partition, made before any marker existed, passed records a lost state held).
   */
  readonly rewind?: true;
}

/** Why a partition did not move, or what is worth a look. */
export const PlanReasonCode = {
  /** No frontier: nothing was admitted on the partition yet. */
  NothingAdmitted: 'nothing-admitted',
  /** The committed offset already equals the frontier. */
  UpToDate: 'up-to-date',
  /**
   * The frontier is below the committed offset. It is never moved back (G2); this means Redis lost the
   * partition's state or someone moved the group by hand.
   */
  BehindCommitted: 'behind-committed',
  /** The frontier has not moved since the previous run while records above it were delivered. */
  Stalled: 'stalled',
  /**
   * The topic no longer exists in Kafka (deleted): `runCommitter` skipped the partition. `planCommit` never
   * reports it; the partition's Redis state stays until the group's state is removed.
   */
  TopicMissing: 'topic-missing',
} as const;
export type PlanReasonCode = (typeof PlanReasonCode)[keyof typeof PlanReasonCode];

export interface PlanReason extends TopicPartition {
  readonly code: PlanReasonCode;
  /** A sentence for logs, with the numbers that explain it. */
  readonly detail: string;
}

/** The plan for one partition that had a frontier input. */
export interface PartitionPlan extends TopicPartition {
  /** What Kafka had before this run (`undefined`: nothing). */
  readonly committedBefore: number | undefined;
  /** The frontier now (`undefined`: nothing admitted). */
  readonly frontier: number | undefined;
  /** The highest delivered offset now (`undefined`: nothing admitted). */
  readonly highest: number | undefined;
  /** What Kafka will have once the plan is applied: max(committedBefore, frontier). */
  readonly committedAfter: number | undefined;
  readonly stalled: boolean;
  /** When the frontier took its current value, if known (a stalled partition's stall began then). */
  readonly frontierSinceMs: number | undefined;
}

/** The output of `planCommit`. */
export interface CommitPlan {
  /** Forward moves only, in the order of the frontier inputs: `to` is always greater than `from`. */
  readonly moves: CommitMove[];
  /** One entry per frontier input, in the same order. */
  readonly partitions: PartitionPlan[];
  /** Partitions that did not move, and stalls. */
  readonly reasons: PlanReason[];
  /** What to remember for the next run (partitions with a frontier only). */
  readonly next: PreviousReading[];
}
