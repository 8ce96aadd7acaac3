/** What a history runs against: the completion store, the committer, Redis losing state (the ports of ./history.ts). */

import type { ParkedRecord, LaneHead } from '../../../src/ports/lane-head';
import type { PartitionRef } from '../../../src/ports/partition';
import type { RecordLog } from '../../../src/recovery/read-range';
import type { CompletionPort } from '../../../src/ports/completion';
import type { HandOffSink } from '../../../src/ports/handoff';
import type { LanesOptions } from '../../../src/options';
import type { Telemetry } from '../../../src/telemetry';

/** The completion store as the engine and the committer's re-drive see it. */
export interface HistoryStore extends CompletionPort {
  trackedPartitions(group: string): Promise<PartitionRef[]>;
  laneHeads(ref: PartitionRef): Promise<LaneHead[]>;
  firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined>;
}

/** Where a history keeps its completion state, and how the ghost reads it. */
export interface HistoryBackend {
  readonly group: string;
  readonly source: string;
  readonly store: HistoryStore;
  /** Which of `offsets` have their done bit set now (offsets below the base count as set). */
  doneOffsets(ref: PartitionRef, offsets: readonly number[]): Promise<Set<number>>;
  /** The offsets kept in the partition's park lists now, over the lanes given. */
  parkedOffsets(ref: PartitionRef, lanes: readonly string[]): Promise<Set<number>>;
  /** How many lanes of the partition are blocked now. */
  blockedLanes(ref: PartitionRef): Promise<number>;
  /**
   * One committer run without its re-drive: reads every tracked partition's frontier (trimming the bitmap), plans
   * the commit against what the completion group has, applies it; with `losses`, finds lost state and recovers it
   * through `recovery`. Returns the committed offset of each partition, by `tpKey`, and the losses found.
   */
  commit(nowMs: number, recovery: HistoryRecovery): Promise<CommitOutcome>;
  /**
   * The committed offsets are durable (`<group>.lanes` never passes a parked record or a lane head): G2 is then
   * checked without counting parked records or lane heads handed off as safe.
   */
  readonly durable: boolean;
  /** How Redis loses state, for `lose` steps; `undefined`: the backend cannot. */
  readonly losses?: LossPort;
}

/** What a committer run recovers a lost partition with: the history's source log, its sink, its options. */
export interface HistoryRecovery {
  readonly source: RecordLog;
  readonly sink: HandOffSink;
  readonly options: LanesOptions;
  readonly telemetry: Telemetry;
  /** Where each trigger is (what its event source mapping committed), by topic and partition. */
  readonly delivered: (topics: readonly string[]) => Promise<Array<{ topic: string; partition: number; offset: number }>>;
}

/** A partition a committer run found lost, and where it was recovered from. */
export interface LossFound {
  readonly topic: string;
  readonly partition: number;
  readonly reason: string;
  /** The durable frontier its records were read again from; `undefined`: not recovered (see `error`). */
  readonly recoveredFrom: number | undefined;
  /** Where the completion group was moved back to first: a commit made before any marker passed lost records. */
  readonly rewoundTo?: number | undefined;
  readonly error?: string;
}

export interface CommitOutcome {
  readonly committed: Map<string, number>;
  readonly losses: readonly LossFound[];
}

/** Redis losing state (the `lose` steps). */
export interface LossPort {
  /** A copy of every key of the group now. */
  snapshot(): Promise<unknown>;
  /** The group's keys become exactly what `snapshot` copied (`undefined`: none at all). */
  restore(snapshot: unknown): Promise<void>;
  /** Deletes the `pick`-th key of the group (modulo their number, in name order); returns it and its partition. */
  loseKey(pick: number): Promise<{ key: string; partition: PartitionRef | undefined } | undefined>;
  /** Deletes the lanes hash of a partition; returns whether it held blocked lanes. */
  loseLanes(ref: PartitionRef): Promise<boolean>;
  /** Whether the completion group's commit of a partition carries a durable marker. */
  hasMarker(topic: string, partition: number): boolean;
  /** The lowest offset the marker's commits vouch for (`DurableMarker.since`), if known. */
  markerSince(topic: string, partition: number): number | undefined;
}

export const tpKey = (topic: string, partition: number): string => `${topic}-${partition}`;
