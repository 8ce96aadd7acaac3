/**
 * The lane-head records of the completion port: a blocked lane's head, how it moves, who holds it, and a parked record.
 */

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

/**
 * What a caller releasing a lane holds on its head (`release-4.lua`): the lease a drained head was given, or the
 * claim of the retry copy that ran it. A head whose entry no longer carries it was written anew meanwhile (a
 * recovery rebuilt the lane, a re-drive took the lease off, a twin took the claim over): the release is refused.
 */
export type LaneHold = { readonly lease: number } | { readonly claim: string };

/** A lane to block (`block-4.lua`): its head, and the lane's later records of the same batch, parked behind it. */
export interface LaneBlock {
  readonly head: NewLaneHead;
  /** Ascending offsets, all above the head's (default none). */
  readonly parked?: readonly ParkedRecord[];
  /** The writer's epoch: a lower one than the partition's is refused (default 0). */
  readonly epoch?: number;
  /** When the lane was blocked, and the head's due time when it gives none (default: the clock). */
  readonly nowMs?: number;
}

/**
 * A release of a lane whose head is terminal (`release-4.lua`): the head's done bit set, the next parked record made
 * the head, or the lane freed. A lane whose head is not `headOffset` is left alone (`NotHeadError`).
 */
export interface LaneRelease {
  readonly lane: string;
  /** The head the caller finished. */
  readonly headOffset: number;
  /** The attempt number the new head's run or retry record carries (default 1). */
  readonly nextAttempt?: number;
  /** Now, also the new head's due time (default: the clock). */
  readonly nowMs?: number;
  /** The new head's lease, when the caller runs it inline (epoch ms; default 0: none). */
  readonly leaseUntilMs?: number;
  /** What the caller holds on the head; without it anyone may release the lane. */
  readonly hold?: LaneHold;
}

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

/** Unordered mode's claim of a retry copy by (origin, attempt) (`claim-copy-1.lua`). */
export interface CopyClaimRequest {
  /** The origin's offset. */
  readonly offset: number;
  readonly attempt: number;
  /** The claiming copy: `topic:partition:offset` of the retry copy itself. */
  readonly copy: string;
  /** How long the claim is kept. */
  readonly ttlMs: number;
  /** `true` once the copy succeeded: the record is terminal, every later copy of it stale. */
  readonly done: boolean;
}

export type CopyClaim = 'claimed' | 'stale';

export interface ParkedRecord {
  readonly offset: number;
  readonly payload: string;
}
