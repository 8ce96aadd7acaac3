/**
 * The partition nouns every room shares: which partition (`PartitionRef`, the most-used noun), where it stands, its
 * caps, and what an audit of its Redis state reads. Pure types: the completion store fills them, the rules read them.
 */

/** One partition of one topic, as seen by one consumer group: the unit the completion engine tracks. */
export interface PartitionRef {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
}

/** Where a partition stands: `base` <= `frontier` <= `highest + 1`. */
export interface PartitionWindow {
  readonly base: number;
  readonly highest: number;
  readonly frontier: number;
}

/** Caps of one partition (docs/ARCHITECTURE.md, "Redis layout"); reaching one refuses records, never drops them. */
export interface PartitionCaps {
  /** Records at or beyond `frontier + maxWindow` are refused. */
  readonly maxWindow: number;
  /** Parked records of the partition, all lanes together. */
  readonly maxParked: number;
  /** Bytes of parked payloads of the partition, all lanes together (Redis memory). */
  readonly maxParkedBytes: number;
}

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

/** What a retry copy whose lane is free reads to judge whether the state was lost (`findCopyLoss` in `durability/`). */
export interface OriginState {
  readonly audit: PartitionAudit;
  /** The origin's done bit, when the state has one for it (at or above `base`). */
  readonly originDone: boolean | undefined;
}
