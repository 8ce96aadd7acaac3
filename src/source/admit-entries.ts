/**
 * The entries of a source batch to admit: one per offset, a record to run (made when first read, its lane found just
 * before its chunk is admitted) or a malformed record or conflicting versions to dead-letter.
 */
import type { PartitionRef } from '../ports/partition';
import { parkPayload } from '../lanes/lane-heads';
import { laneIdOf, laneIdOfKey } from '../lanes/lane-id';
import { jsonText } from '../describe';
import type { LanesOptions } from '../options/lanes-options';
import { describeError } from '../lanes/outcome';
import { LazyPartitionBatch, planOffsets, type DecodeFailure, type Delivered, type KafkaRecord, type OffsetSlot, type PartitionBatch, type RecordCoordinates } from '../event';
import { DeserializationError } from '../options/errors';

/**
 * One offset of a batch to admit: a record to run (with its lane), or a malformed record or conflicting
 * versions to dead-letter. Its `payload` (what a park list keeps) is built only if Redis asks for it.
 */
export class AdmitEntry {
  // Read on every scheduling step: own fields, not getters (a getter at the scheduler's sites, which see tasks of
  // several classes, showed in the profile).
  readonly partitionKey: string;
  readonly ref: PartitionRef;
  readonly attempt = 1;
  readonly offset: number;
  lane: string | undefined = undefined;
  preset: unknown = undefined;
  fresh = false;
  // A batch's entries live as long as its invocation (every one is made when its chunk is admitted): what only a
  // malformed record or conflicting versions have is read from their slot.
  /** A malformed record or conflicting versions: their slot (rare). */
  readonly #slot: OffsetSlot | undefined;
  #record: KafkaRecord | undefined;
  /** Where a record checked but not made yet is: made when first read (when it runs), kept no longer than the entry. */
  readonly #batch: LazyPartitionBatch | undefined;
  readonly #index: number;
  #origin: RecordCoordinates | undefined = undefined;

  /** `from`: the record made, its slot (a failure or conflicting versions), or where it lies in a batch decoded lazily. */
  constructor(at: EntryPlace, offset: number, from: EntryFrom) {
    this.partitionKey = at.partitionKey;
    this.ref = at.ref;
    this.offset = offset;
    this.#record = from.record;
    this.#slot = from.slot;
    this.#batch = from.slot === undefined ? from.batch : undefined;
    this.#index = from.index ?? -1;
  }

  get failure(): DecodeFailure | undefined {
    return this.#slot?.failure;
  }

  get conflict(): readonly Delivered[] | undefined {
    return this.#slot?.conflict;
  }

  /** A record to run: neither malformed nor conflicting versions of its offset. */
  get runnable(): boolean {
    return this.#record !== undefined || this.#batch !== undefined;
  }

  get record(): KafkaRecord | undefined {
    return this.#record ?? (this.#batch === undefined ? undefined : (this.#record = this.#batch.recordAt(this.#index)));
  }

  /** A source record's origin is where it was read. */
  get origin(): RecordCoordinates {
    return (this.#origin ??= { topic: this.ref.topic, partition: this.ref.partition, offset: this.offset });
  }

  get payload(): string | undefined {
    if (this.#record === undefined && this.#batch !== undefined) return jsonText(this.#batch.rawAt(this.#index));
    return this.#record === undefined ? undefined : parkPayload(this.#record);
  }

  /** Its lane: from the key as AWS sent it when that is its lane id (no decoding), else from the record. */
  laneOf(options: LanesOptions): string | undefined {
    const key = this.#batch !== undefined && this.#record === undefined && options.keyOf === undefined ? this.#batch.keyTextAt(this.#index) : undefined;
    return key === undefined ? laneIdOf(this.record!, options) : laneIdOfKey(key, options);
  }
}

/** The partition an entry belongs to (shared by a batch's entries). */
interface EntryPlace {
  readonly partitionKey: string;
  readonly ref: PartitionRef;
}

/** Where an entry's record comes from. */
interface EntryFrom {
  readonly record?: KafkaRecord | undefined;
  readonly slot?: OffsetSlot | undefined;
  readonly batch?: LazyPartitionBatch;
  readonly index?: number;
}

/** An admitted entry with a record to run: the task the engine schedules. */
export type RunnableEntry = AdmitEntry & { readonly record: KafkaRecord };

/**
 * A batch's offsets, each once and ascending, and how to make the entries of a part of it (`chunkOf`). A batch
 * decoded lazily with strictly ascending offsets (every batch AWS sends) is decoded a chunk at a time: a record
 * that cannot be decoded there still has its offset, and is dead-lettered as in a batch decoded at once. Other
 * batches are decoded whole and their records sharing an offset are planned by `planOffsets` (identical copies
 * run once, differing ones are all dead-lettered); a batch without failures and with strictly ascending offsets
 * skips that work.
 */
export interface BatchEntries {
  readonly offsets: readonly number[];
  /** The entries of offsets [from, to). */
  slice(from: number, to: number): AdmitEntry[];
  readonly unplaced: readonly DecodeFailure[];
  readonly duplicates: number;
}

export function batchEntries(batch: PartitionBatch, at: EntryPlace): BatchEntries {
  const offsets = batch instanceof LazyPartitionBatch ? batch.ascendingOffsets() : undefined;
  if (offsets !== undefined) {
    const lazy = batch as LazyPartitionBatch;
    return {
      offsets,
      unplaced: [],
      duplicates: 0,
      slice(from, to) {
        const end = Math.min(to, offsets.length);
        const entries = new Array<AdmitEntry>(Math.max(0, end - from));
        for (let i = from; i < end; i += 1) {
          // Checked now, made into a record when it runs: a queued record holds no bytes.
          const failure = lazy.failureAt(i);
          entries[i - from] = failure === undefined
            ? new AdmitEntry(at, offsets[i]!, { batch: lazy, index: i })
            : new AdmitEntry(at, offsets[i]!, { slot: { offset: offsets[i]!, failure } });
        }
        return entries;
      },
    };
  }
  const { records, failures } = batch;
  let plain = failures.length === 0;
  for (let i = 1; plain && i < records.length; i += 1) plain = records[i - 1]!.offset < records[i]!.offset;
  const plan = plain ? undefined : planOffsets(records, failures);
  const slots: readonly OffsetSlot[] = plan?.slots ?? records;
  const entries = new Array<AdmitEntry>(slots.length);
  for (let i = 0; i < slots.length; i += 1) {
    const slot = slots[i]!;
    entries[i] = new AdmitEntry(at, slot.offset, plain ? { record: slot as KafkaRecord } : { record: slot.record, slot });
  }
  return {
    offsets: entries.map((entry) => entry.offset),
    unplaced: plan?.unplaced ?? [],
    duplicates: plan?.duplicates ?? 0,
    slice: (from, to) => entries.slice(from, to),
  };
}

/**
 * The next chunk, made while Redis admits the one before: in slices, each after a turn of the event loop, so the
 * call before is sent first (that takes a few promise turns) and a reply that comes meanwhile starts its records
 * at once rather than after the whole chunk is decoded.
 */
export async function nextChunk(options: LanesOptions, entries: BatchEntries, from: number, to: number): Promise<AdmitEntry[]> {
  const end = Math.min(to, entries.offsets.length);
  const chunk: AdmitEntry[] = [];
  for (let at = from; at < end; at += PREPARE_SLICE) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const entry of chunkOf(options, entries, at, Math.min(end, at + PREPARE_SLICE))) chunk.push(entry);
  }
  return chunk;
}

/** Records of a chunk made at once while the call before is in flight. */
const PREPARE_SLICE = 512;

/** The entries of offsets [from, to) with their lanes, found just before they are admitted. */
export function chunkOf(options: LanesOptions, entries: BatchEntries, from: number, to: number): AdmitEntry[] {
  const chunk = entries.slice(from, to);
  assignLanes(options, chunk);
  return chunk;
}

/** The lanes of a chunk's records, found just before it is admitted (the first chunk need not wait for the rest). */
function assignLanes(options: LanesOptions, entries: readonly AdmitEntry[]): void {
  for (const entry of entries) {
    if (!entry.runnable) continue;
    try {
      entry.lane = entry.laneOf(options);
    } catch (error) {
      // Without its lane the record cannot run in order: it is dead-lettered like an unreadable key.
      entry.preset = new DeserializationError('key', entry.record!, `keyOf threw: ${describeError(error).message}`, { cause: error });
    }
  }
}
