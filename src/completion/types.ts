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
  /** Beyond the window cap (or the parked cap): not admitted, report it as not processed (back-pressure). */
  | 'refused';

/** A record as given to `admit`: its offset, its lane (absent: independent), and what to park if needed. */
export interface AdmitRecord {
  readonly offset: bigint | number;
  /** Lane id (see `laneId`); `undefined` for an independent record (unordered mode, null key). */
  readonly lane?: string | undefined;
  /** The payload stored in the park list if the lane is blocked. */
  readonly payload?: string | Buffer | undefined;
}
