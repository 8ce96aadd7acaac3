import type { DecodeFailure, KafkaRecord } from './types';

/** One thing delivered at an offset: a decoded record, or a record that could not be decoded. */
export type Delivered = KafkaRecord | DecodeFailure;

/** What to do with one offset of a partition's batch; exactly one of `record`, `failure` and `conflict` is set. */
export interface OffsetSlot {
  readonly offset: number;
  /** The record to run. */
  readonly record?: KafkaRecord;
  /** The malformed record to dead-letter. */
  readonly failure?: DecodeFailure;
  /**
   * Two or more differing versions of the offset: none can be said to be the record, so every one is
   * dead-lettered (reason `duplicate-offset`) and the offset is done only once all of them are.
   */
  readonly conflict?: readonly Delivered[];
}

/** A partition's records and failures, one slot per offset. */
export interface OffsetPlan {
  /** Ascending offsets, each once. */
  readonly slots: OffsetSlot[];
  /** Failures without a readable offset: dead-lettered, but no done bit can be set for them. */
  readonly unplaced: DecodeFailure[];
  /** Copies identical to a version kept in `slots`: not run again, counted as duplicates. */
  readonly duplicates: number;
}

/**
 * Tells whether a delivered item is a decode failure.
 *
 * @example
 * isDecodeFailure(batch.failures[0]); // true
 */
export function isDecodeFailure(item: Delivered): item is DecodeFailure {
  return 'reason' in item;
}

/**
 * Groups a partition's decoded records and failures by offset. AWS never sends two records at one offset,
 * but a corrupted or hand-made event can, and keeping only the first lost the others without a word:
 * identical copies (same record JSON) count as one, differing ones all go to the dead-letter topic.
 *
 * @example
 * const plan = planOffsets(batch.records, batch.failures);
 * for (const slot of plan.slots) if (slot.record) run(slot.record); else deadLetter(slot);
 */
export function planOffsets(records: readonly KafkaRecord[], failures: readonly DecodeFailure[]): OffsetPlan {
  const byOffset = new Map<number, Delivered[]>();
  const unplaced: DecodeFailure[] = [];
  const add = (offset: number, item: Delivered): void => {
    const versions = byOffset.get(offset);
    if (versions === undefined) byOffset.set(offset, [item]);
    else versions.push(item);
  };
  for (const failure of failures) {
    if (failure.offset === undefined) unplaced.push(failure);
    else add(failure.offset, failure);
  }
  for (const record of records) add(record.offset, record);

  let duplicates = 0;
  const slots: OffsetSlot[] = [];
  for (const [offset, versions] of byOffset) {
    const distinct: Delivered[] = [];
    for (const version of versions) {
      if (distinct.some((kept) => sameJson(kept.raw, version.raw))) duplicates += 1;
      else distinct.push(version);
    }
    const [only] = distinct;
    if (distinct.length > 1) slots.push({ offset, conflict: distinct });
    else if (only !== undefined && isDecodeFailure(only)) slots.push({ offset, failure: only });
    else if (only !== undefined) slots.push({ offset, record: only });
  }
  slots.sort((a, b) => a.offset - b.offset);
  return { slots, unplaced, duplicates };
}

/**
 * Deep equality of two values parsed from JSON, key order ignored, with an explicit stack: a record may nest
 * deeper than the call stack allows.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  const pending: Array<[unknown, unknown]> = [[a, b]];
  while (pending.length > 0) {
    const [x, y] = pending.pop()!;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i += 1) pending.push([x[i], y[i]]);
      continue;
    }
    const xs = Object.keys(x);
    const ys = Object.keys(y);
    if (xs.length !== ys.length) return false;
    for (const key of xs) {
      if (!Object.prototype.hasOwnProperty.call(y, key)) return false;
      pending.push([(x as Record<string, unknown>)[key], (y as Record<string, unknown>)[key]]);
    }
  }
  return true;
}
