/**
 * The admission records of the completion port: what `admit` is given and what it decides.
 */
import type { LaneHead } from './lane-head';
import type { PartitionWindow } from './partition';

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
