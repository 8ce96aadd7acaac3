import type { RecordCoordinates } from '../event';

/** One partition of one topic, as seen by one consumer group: the unit the completion engine tracks. */
export interface PartitionRef {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
}

/** What `admit` decided for one delivered record, in the order the records were given. */
export type AdmitStatus =
  /** Not done and its lane is free (or it is its blocked lane's own head, redelivered): run it. */
  | 'run'
  /** Its done bit is set, or it lies below `base`: skip it (G7). */
  | 'duplicate'
  /** Its lane is blocked: it was parked with its payload and its done bit set, in the same call. */
  | 'parked'
  /**
   * It is the head of its own blocked lane and not done: an earlier hand-off may not have completed, so
   * hand it off again (with the attempt `admit` reports) rather than run it.
   */
  | 'handoff'
  /** Beyond the window cap (or the parked cap): not admitted, report it as not processed (back-pressure). */
  | 'refused';

/** A record as given to `admit`: its offset, its lane (absent: independent), and what to park if needed. */
export interface AdmitRecord {
  /** A safe integer (the event decoder rejects anything else). */
  readonly offset: number;
  /** Lane id (see `laneId`); `undefined` for an independent record (unordered mode, null key). */
  readonly lane?: string | undefined;
  /**
   * What the park list stores if the lane is blocked. Sent to Redis only when the lane turns out to be
   * blocked (a second call), so a function lets the caller skip building payloads nobody needs.
   */
  readonly payload?: string | (() => string) | undefined;
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

export interface AdmitResult {
  /** One status per record, in the order given. */
  readonly statuses: AdmitStatus[];
  /** For each `handoff` status, in order: the lane head as Redis keeps it, to hand the record off again as it was. */
  readonly handoffHeads: LaneHead[];
  /** Whether any record was refused at a cap. */
  readonly backPressure: boolean;
  readonly window: PartitionWindow | undefined;
  /**
   * The highest offset admitted before this call (-1: the call made the state): a record admitted now above it
   * never ran under this state. `undefined`: not known (every record may have run before).
   */
  readonly seenUpTo?: number | undefined;
}

/** Where a partition stands: `base` <= `frontier` <= `highest + 1`. */
export interface PartitionWindow {
  readonly base: number;
  readonly highest: number;
  readonly frontier: number;
}

/** The head of a blocked lane, as the retry path knows it. */
export interface LaneHead {
  readonly lane: string;
  readonly offset: number;
  /** The attempt number its next run (or retry record) carries; for a held head, its last run. */
  readonly attempt: number;
  /** `retrying`: in the retry path; `held`: dead-lettered under the `hold` policy, waiting for an operator. */
  readonly state: 'retrying' | 'held';
  /** When its retry copy is due (epoch ms); for a held head, when it was dead-lettered. */
  readonly dueAtMs: number;
  /** Why a held head was dead-lettered; for a retrying one, '' or `deferred` (blocked at the deadline, never run). */
  readonly reason: string;
  /**
   * 0, or the epoch ms until which a live retry function owns the head while its retry copy may not exist
   * (run inline after a release, or being written after a failure). A committer run finding it expired
   * writes the copy from the payload kept first in the lane's park list (re-drive).
   */
  readonly leaseUntilMs: number;
}

/**
 * What a caller releasing a lane holds on its head (`release-4.lua`): the lease a drained head was given, or the
 * claim of the retry copy that ran it. A head whose entry no longer carries it was written anew meanwhile (a
 * recovery rebuilt the lane, a re-drive took the lease off, a twin took the claim over): the release is refused.
 */
export type LaneHold = { readonly lease: number } | { readonly claim: string };

/** A retry copy's claim on its lane's head, before it runs (see `claim-1.lua`). */
export interface HeadClaimRequest {
  /** The claiming copy: `topic:partition:offset` of the retry copy itself. */
  readonly copy: string;
  readonly nowMs: number;
  /** When the claim ends: the copy's record deadline (epoch ms). */
  readonly untilMs: number;
}

/**
 * What a claim found: `claimed` (run the copy); `not-head` (a stale or duplicated copy: the lane is free, or
 * its head is another record, attempt, or held); `claimed-elsewhere` (another copy of the same head and attempt
 * runs until `untilMs`).
 */
export type HeadClaim =
  | { readonly status: 'claimed' }
  | { readonly status: 'not-head'; readonly head: LaneHead | undefined }
  | { readonly status: 'claimed-elsewhere'; readonly untilMs: number };

/** A head to block a lane on: its due time defaults to now, its reason to none. */
export type NewLaneHead = Omit<LaneHead, 'dueAtMs' | 'reason' | 'leaseUntilMs'> & { readonly dueAtMs?: number; readonly reason?: string };

/** Where `advance` moves a lane's head: its next attempt and due time, or held; a lease while its copy may not exist. */
export interface HeadAdvance {
  readonly attempt: number;
  readonly state: 'retrying' | 'held';
  readonly dueAtMs: number;
  /** 0: none. */
  readonly leaseUntilMs: number;
  readonly reason?: string;
  /** The head's payload, kept first in its park list while a lease is set (sent only with a lease). */
  readonly payload?: string;
}

/** Where one record's step results live (`ctx.step`): its first origin's partition (the hash tag) and offset. */
export interface StepsRef {
  readonly ref: PartitionRef;
  readonly offset: number;
}

/** The step results of a record of a partition to delete: its offset and the names of its steps. */
export interface RecordSteps {
  readonly offset: number;
  readonly names: readonly string[];
}

/** The step results of a terminal record to delete: where they live and the names of its steps. */
export interface StoredSteps extends StepsRef, RecordSteps {}

/** The identity of an output another kafka-lanes stage sent (its `lanes-output` header). */
export interface OutputId {
  /** The group of the stage that sent it. */
  readonly group: string;
  /** The first origin of the record whose handler sent it. */
  readonly origin: RecordCoordinates;
  /** Its place among that record's outputs, from 0. */
  readonly index: number;
}

export type CopyClaim = 'claimed' | 'stale';
