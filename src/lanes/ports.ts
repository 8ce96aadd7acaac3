/**
 * The ports of the engine (an engine takes ports, not clients). The Redis completion store and the
 * Kafka hand-off writer implement them in production; the in-memory models of src/testing implement them in
 * unit tests, so ordering, deadline and hand-off logic is tested without a broker.
 */
import type { CallLimits } from '../completion/scripts';
import type { AdmitRecord, AdmitResult, CopyClaim, HeadAdvance, HeadClaim, HeadClaimRequest, LaneHead, LaneHold, NewLaneHead, PartitionRef, RecordSteps } from '../completion/types';
import type { ParkedRecord } from '../completion/args';
import type { OriginState } from '../completion/loss-suspect';
import type { HandOffItem, HandOffOutcome, OutputMessage } from '../handoff/types';

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
  block(ref: PartitionRef, head: NewLaneHead, parked?: readonly ParkedRecord[], epoch?: number, nowMs?: number): Promise<number>;
  /** `hold`: what the caller holds on the head (`LaneHold`); without it anyone may release the lane. */
  release(ref: PartitionRef, lane: string, expectedHeadOffset: number, nextAttempt?: number, nowMs?: number, leaseUntilMs?: number, hold?: LaneHold): Promise<ParkedRecord | undefined>;
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
  claimCopy?(origin: PartitionRef, offset: number, attempt: number, copy: string, ttlMs: number, done: boolean): Promise<CopyClaim>;
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

/** Writes retry and dead-letter copies; resolves once the broker acknowledged them (acks=all). */
export interface HandOffSink {
  /**
   * One outcome per item, in order. `refused`: the broker refused the item for good and a stripped dead-letter
   * copy of it was written instead. A transient failure rejects the whole call. `signal` aborts a write that
   * would outlive the invocation.
   */
  write(items: readonly HandOffItem[], options?: { signal?: AbortSignal }): Promise<readonly HandOffOutcome[]>;
  /**
   * Produces the `ctx.send` outputs of records finishing together, one list per record (acks=all). One outcome per
   * record, in order: `undefined` once every output of it is acknowledged, else why not; a record whose outputs
   * were acknowledged is not failed by another's. A rejection fails them all.
   */
  send?(records: ReadonlyArray<readonly OutputMessage[]>, options?: { signal?: AbortSignal }): Promise<ReadonlyArray<Error | undefined>>;
}

/** Epoch milliseconds. Timers stay real: a clock only moves the engine's idea of "now". */
export interface Clock {
  now(): number;
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now() };
