/**
 * The completion port (an engine takes ports, not clients): done bits, lanes and park lists. `CompletionStore`
 * (`completion/store.ts`) implements it on Redis; the in-memory model of src/testing in unit tests, so ordering,
 * deadline and hand-off logic is tested without a broker.
 */
import type { AdmitRecord, AdmitResult } from './admission';
import type { CopyClaim, CopyClaimRequest, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneRelease, ParkedRecord } from './lane-head';
import type { OriginState, PartitionRef } from './partition';
import type { RecordSteps } from './effects';
import type { CallLimits } from './limits';

/** The completion state the engine needs: done bits, lanes and park lists of each partition (docs/ARCHITECTURE.md, "Redis layout"). */
export interface CompletionPort {
  admit(ref: PartitionRef, records: readonly AdmitRecord[], epoch?: number): Promise<AdmitResult>;
  /**
   * Sets done bits. `steps` (a store with `forgetsSteps`): records of the partition (their first origin) and their
   * steps, whose results go in the same call, once the bits are set.
   */
  markDone(ref: PartitionRef, offsets: readonly number[], epoch?: number, steps?: readonly RecordSteps[]): Promise<number>;
  /** `markDone` deletes the step results it is given; without it they go through `EffectsPort.forgetSteps`. */
  readonly forgetsSteps?: boolean;
  /** Blocks a lane on its head and parks later records of it; returns how many were parked. */
  block(ref: PartitionRef, block: LaneBlock): Promise<number>;
  /** Releases a lane whose head is terminal: returns its next parked record (the new head) or `undefined`. */
  release(ref: PartitionRef, release: LaneRelease): Promise<ParkedRecord | undefined>;
  advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void>;
  laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined>;
  /** The retry function's head check before a copy runs: check and take in one step (`claim-1.lua`). */
  claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim>;
  /**
   * Unordered mode's check before a retry copy runs, by (origin, attempt), a record without a lane having no head to
   * check: `stale` when the record is terminal, a later attempt ran, or another copy of this attempt ran; otherwise the
   * attempt is taken by this copy. `done` records the record as terminal after its copy succeeded. A store without it
   * runs every copy.
   */
  claimCopy?(origin: PartitionRef, claim: CopyClaimRequest): Promise<CopyClaim>;
  /** The same store with other call limits (an invocation's deadline signal). */
  withLimits(limits: CallLimits): CompletionPort;
  /**
   * What a retry copy whose lane is free reads to judge whether the partition's state was lost (`findCopyLoss`): its
   * audit and the origin's done bit. A store without it never suspects a loss.
   */
  originState?(ref: PartitionRef, origin: number): Promise<OriginState>;
  /** Reports a loss a retry copy found, with its origin, in the partition's `meta`: the committer's next run recovers it. */
  reportLoss?(ref: PartitionRef, origin: number): Promise<void>;
  /**
   * Whether the completion group is known to hold the partition's durable marker (docs/durability.md, "The first minute"); a store
   * without it has no first minute to watch (the in-memory model loses nothing).
   */
  durablyMarked?(ref: PartitionRef): Promise<boolean>;
  /** Redis `WAIT`: how many replicas acknowledged every write made so far (the fewest, on a cluster). */
  waitForReplicas?(replicas: number, timeoutMs: number): Promise<number>;
}
