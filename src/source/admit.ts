import type { PartitionRef } from '../ports/partition';
import type { AdmitStatus } from '../ports/admission';
import type { LaneHead } from '../ports/lane-head';
import type { EffectsPort } from '../ports/effects';
import type { Logger } from '@aws-lambda-powertools/logger';
import { deadLetterConflicts, deadLetterMalformed, writeAndMarkDone } from '../engine/dead-letters';
import { DEFERRED_HEAD, parkPayload, watchCopies } from '../lanes/lane-heads';
import { laneIdOf, laneIdOfKey } from '../lanes/lane-id';
import { jsonText } from '../describe';
import type { LanesOptions } from '../options/lanes-options';
import { describeError, type DeadLetterReason } from '../lanes/outcome';
import type { EngineTask, PathParts, RunScope } from '../engine/run-scope';
import { LazyPartitionBatch, planOffsets, topicPartitionKey, type DecodeFailure, type Delivered, type KafkaRecord, type OffsetSlot, type PartitionBatch, type RecordCoordinates } from '../event';
import { DeserializationError } from '../options/errors';

/** A delivered record of a source topic, to run as attempt 1 (or to fail at once, `preset`). */
export type SourceTask = EngineTask;

/** How far below `highest` a batch wholly below `base` must lie to look like a re-created topic. */
export const RECREATED_TOPIC_GAP = 10_000;

/** What admitting source records needs of a run scope. */
type AdmitScope = Pick<RunScope<SourceTask>, 'store' | 'effects' | 'now' | 'write' | 'enqueue' | 'redeliver' | 'markDone' | 'unreportable' | 'count' | 'window' | 'guard'>;

/** The partition a batch is admitted on, and where its step results are stored up to (read beside its first call). */
interface BatchAt {
  readonly ref: PartitionRef;
  readonly partitionKey: string;
  readonly stepsUpTo: Promise<number | undefined>;
}

/**
 * Admits one partition's batch of source records: one `admit` script call per chunk (gaps bridged, duplicates
 * skipped, records of blocked lanes parked); hands off at once what needs no run (malformed records,
 * conflicting versions of an offset, a blocked lane's head redelivered).
 */
export async function admitSourceBatch(scope: AdmitScope, parts: PathParts, batch: PartitionBatch): Promise<{ tasks: SourceTask[]; handOffs: Promise<unknown> }> {
  const { topic, partition } = batch;
  const ref: PartitionRef = { group: parts.options.group, topic, partition };
  const partitionKey = topicPartitionKey(topic, partition);
  const entries = batchEntries(batch, { partitionKey, ref });
  scope.count('duplicates', entries.duplicates);
  // A malformed record with an unreadable offset cannot get a done bit: dead-letter it and go on.
  const handOffs: Array<Promise<unknown>> = [scope.guard(deadLetterMalformed(scope, parts, ref, entries.unplaced), partitionKey)];

  // One atomic script call per chunk, in offset order: the records of the first (small) chunk start
  // while the later ones are admitted. Order per lane holds: a lane's records are queued behind its
  // running head in the scheduler, and a head that fails waits for the whole admission before it parks
  // the lane's followers (`failed`). A chunk's records are decoded (an event decoded lazily) and their lanes
  // found just before it is admitted: the next chunk's while Redis admits this one.
  const count = entries.offsets.length;
  let from = 0;
  // A small batch is admitted in one call: chunks would cost round trips and save little time.
  let size = count <= ADMIT_ONE_CALL ? count : ADMIT_FIRST_CHUNK;
  let tasks: SourceTask[] = [];
  // Read beside the first admission call (sent before it): where step results are stored up to on this partition.
  const at: BatchAt = { ref, partitionKey, stepsUpTo: stepsStoredUpTo(scope.effects, ref) };
  let chunk = chunkOf(parts.options, entries, 0, size);
  while (chunk.length > 0) {
    const last = from + chunk.length >= count;
    const first = from === 0;
    // A chunk's records start as soon as its reply comes (the last chunk's are the engine's to add).
    const admitting = admitChunk(scope, parts, at, chunk).then((admitted) => {
      if (first && admitted?.window !== undefined) warnIfRecreated(parts.logger, partitionKey, entries.offsets, admitted.window);
      if (admitted !== undefined && !last) scope.enqueue(admitted.tasks);
      return admitted;
    });
    from += chunk.length;
    size = Math.min(size * 2, ADMIT_MAX_CHUNK);
    const next = last ? [] : await nextChunk(parts.options, entries, from, from + size);
    const admitted = await admitting;
    if (admitted?.handOffs !== undefined) handOffs.push(admitted.handOffs);
    if (admitted !== undefined && last) tasks = admitted.tasks;
    // Redis refused or back-pressure: the rest of the batch is not admitted now; the event source
    // redelivers it (a later record of a lane must not run while an earlier one was refused).
    if (admitted === undefined || admitted.stop) {
      refuseRest(scope, ref, entries.offsets.slice(from));
      break;
    }
    chunk = next;
  }
  return { tasks, handOffs: Promise.all(handOffs) };
}

/** What one chunk's admission gave: its tasks, the hand-offs it found, the window, and whether to stop (back-pressure). */
interface ChunkAdmitted {
  readonly tasks: SourceTask[];
  readonly handOffs?: Promise<unknown>;
  readonly stop: boolean;
  readonly window: { base: number; highest: number } | undefined;
}

/**
 * Admits one chunk: its tasks, the hand-offs it found, and `stop` when the rest of the batch must not be
 * admitted in this invocation (back-pressure); `undefined` when Redis could not be reached.
 */
async function admitChunk(scope: AdmitScope, parts: PathParts, at: BatchAt, entries: readonly AdmitEntry[]): Promise<ChunkAdmitted | undefined> {
  const { ref, partitionKey } = at;
  let result;
  try {
    result = await scope.store.admit(ref, entries);
  } catch (error) {
    parts.logger.error('cannot admit batch: Redis unreachable or refused; the whole partition will be redelivered', {
      partition: partitionKey, error: describeError(error),
    });
    scope.redeliver(ref, entries.map((entry) => entry.offset));
    return undefined;
  }
  if (result.window !== undefined) scope.window(ref, result.window);
  if (result.backPressure) {
    parts.logger.warn('back-pressure: records refused at the window or parked cap; the event source will redeliver them', {
      partition: partitionKey, caps: parts.options.caps, window: result.window,
    });
  }
  const storedUpTo = await at.stepsUpTo;
  // Above both, a record ran under no state that is kept, and no step result of it is stored.
  const freshAbove = result.seenUpTo === undefined || storedUpTo === undefined ? Infinity : Math.max(result.seenUpTo, storedUpTo);
  const sorted = sortAdmitted(scope, ref, entries, result.statuses, freshAbove);
  const { tasks } = sorted;
  const done = { tasks, stop: result.backPressure, window: result.window };
  if (sorted.malformed === undefined && sorted.conflicts === undefined && sorted.heads === undefined) return done;
  const handingOff = await handOffAtAdmission(scope, parts, ref, { ...sorted, headEntries: result.handoffHeads });
  return { ...done, handOffs: scope.guard(handingOff.written, partitionKey) };
}

/** A chunk's entries by what Redis said of them: to run, counted (duplicate, parked, refused), or to hand off. */
interface Sorted {
  readonly tasks: SourceTask[];
  malformed?: DecodeFailure[];
  conflicts?: Array<{ offset: number; versions: readonly Delivered[] }>;
  heads?: RunnableEntry[];
}

function sortAdmitted(scope: AdmitScope, ref: PartitionRef, entries: readonly AdmitEntry[], statuses: readonly AdmitStatus[], freshAbove: number): Sorted {
  const sorted: Sorted = { tasks: [] };
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i]!;
    const status = statuses[i];
    if (status === 'run' && entry.runnable) {
      entry.fresh = entry.offset > freshAbove;
      sorted.tasks.push(entry as RunnableEntry);
    } else if (status === 'duplicate') scope.count('duplicates');
    else if (status === 'parked') scope.count('parked');
    else if (status === 'refused') {
      scope.count('refused');
      scope.redeliver(ref, [entry.offset]);
    } else if (entry.conflict !== undefined) {
      (sorted.conflicts ??= []).push({ offset: entry.offset, versions: entry.conflict });
    } else if (entry.failure !== undefined) {
      (sorted.malformed ??= []).push(entry.failure);
    } else if (status === 'handoff') {
      (sorted.heads ??= []).push(entry as RunnableEntry);
    }
  }
  return sorted;
}

/**
 * What a chunk hands off at once (the writes under way, once the watch copies are known): malformed records and conflicting versions dead-lettered, and the heads of blocked
 * lanes redelivered before their hand-off was known to complete, handed off again as Redis recorded them (a held head
 * to the dead-letter topic, a retrying one with its attempt and due time); the retry function drops whichever copy is
 * no longer the lane's head.
 */
async function handOffAtAdmission(scope: AdmitScope, parts: PathParts, ref: PartitionRef, sorted: Sorted & { headEntries: readonly LaneHead[] }): Promise<{ written: Promise<unknown> }> {
  const now = scope.now();
  const headEntries = sorted.headEntries.values();
  const redelivered = (sorted.heads ?? []).map(({ record, lane }) => {
    const head = headEntries.next().value;
    if (head?.state === 'held') {
      return parts.copies.deadLetter({ record, origin: originOfRecord(record), lane }, head.attempt, (head.reason || 'non-retriable') as DeadLetterReason, {
        name: 'HeldLane', message: 'dead-lettered again: the first dead-letter write was not known to complete',
      });
    }
    const basis = { record, origin: originOfRecord(record), lane };
    // A head blocked at the deadline never ran: it goes on as deferred (attempt unchanged), as it first did.
    if (head?.reason === DEFERRED_HEAD) return parts.copies.deferred(basis, head.attempt, head.dueAtMs);
    return parts.copies.retry(basis, { attempt: head?.attempt ?? 1, dueAtMs: head?.dueAtMs ?? now, firstFailureAtMs: now });
  });
  // A held head dead-lettered again in the partition's first minute gets its watch copy again (`watchHeldHead`).
  const heldAgain = redelivered.filter((item) => item.kind === 'dead-letter' && item.lane !== undefined);
  const watches = await watchCopies({ store: scope.store, copies: parts.copies, now: scope.now }, ref, heldAgain.map((item) => ({ basis: item, attempt: item.attempt })), now);
  const written = Promise.all([
    writeAndMarkDone(scope, ref, [...redelivered, ...watches], () => {
      for (const item of redelivered) scope.count(item.kind === 'dead-letter' ? 'deadLettered' : item.deferred === true ? 'deferred' : 'retried');
    }),
    deadLetterMalformed(scope, parts, ref, sorted.malformed ?? []),
    deadLetterConflicts(scope, parts, ref, sorted.conflicts ?? []),
  ]);
  return { written };
}

/** A batch of at most this many records is admitted in one call. */
export const ADMIT_ONE_CALL = 2_048;
/** The first chunk of a larger batch: small, so the first records start soon. */
export const ADMIT_FIRST_CHUNK = 256;
/**
 * Chunks double up to this size (a batch of 10,000: 256, 512, 1,024, 2,048, 4,096, 2,064). Doubling, not
 * growing fourfold: a chunk must be admitted before the lanes reach its records, and at concurrency 1,000 with a
 * 10 ms handler a fourfold third chunk (4,096 records) came back after 720 lanes had finished their first record and waited for their second.
 */
export const ADMIT_MAX_CHUNK = 8_192;

/**
 * One offset of a batch to admit: a record to run (with its lane), or a malformed record or conflicting
 * versions to dead-letter. Its `payload` (what a park list keeps) is built only if Redis asks for it.
 */
class AdmitEntry {
  readonly partitionKey: string;
  readonly ref: PartitionRef;
  readonly offset: number;
  readonly failure: DecodeFailure | undefined;
  readonly conflict: readonly Delivered[] | undefined;
  readonly attempt = 1;
  lane: string | undefined = undefined;
  preset: unknown = undefined;
  fresh = false;
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
    this.failure = from.slot?.failure;
    this.conflict = from.slot?.conflict;
    this.#batch = from.slot === undefined ? from.batch : undefined;
    this.#index = from.index ?? -1;
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
type RunnableEntry = AdmitEntry & { readonly record: KafkaRecord };

/**
 * A batch's offsets, each once and ascending, and how to make the entries of a part of it (`chunkOf`). A batch
 * decoded lazily with strictly ascending offsets (every batch AWS sends) is decoded a chunk at a time: a record
 * that cannot be decoded there still has its offset, and is dead-lettered as in a batch decoded at once. Other
 * batches are decoded whole and their records sharing an offset are planned by `planOffsets` (identical copies
 * run once, differing ones are all dead-lettered); a batch without failures and with strictly ascending offsets
 * skips that work.
 */
interface BatchEntries {
  readonly offsets: readonly number[];
  /** The entries of offsets [from, to). */
  slice(from: number, to: number): AdmitEntry[];
  readonly unplaced: readonly DecodeFailure[];
  readonly duplicates: number;
}

function batchEntries(batch: PartitionBatch, at: EntryPlace): BatchEntries {
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
async function nextChunk(options: LanesOptions, entries: BatchEntries, from: number, to: number): Promise<AdmitEntry[]> {
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
function chunkOf(options: LanesOptions, entries: BatchEntries, from: number, to: number): AdmitEntry[] {
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

/**
 * The highest offset of the partition with stored step results (-1: none), or `undefined` when it cannot be known
 * (no effects store, Redis did not answer): then every record reads its steps.
 */
function stepsStoredUpTo(effects: EffectsPort | undefined, ref: PartitionRef): Promise<number | undefined> {
  const read = effects?.stepsStoredUpTo?.(ref);
  return read === undefined ? Promise.resolve(undefined) : read.catch(() => undefined);
}

/** Records of a batch not admitted now (refused, or behind a refusal): the event source redelivers them. */
function refuseRest(scope: Pick<AdmitScope, 'count' | 'redeliver'>, ref: PartitionRef, rest: readonly number[]): void {
  scope.count('refused', rest.length);
  scope.redeliver(ref, rest);
}

function originOfRecord(record: KafkaRecord): { topic: string; partition: number; offset: number } {
  return { topic: record.topic, partition: record.partition, offset: record.offset };
}

/**
 * Topic re-created under the same name: its offsets restart below the stored `base`, and every record would
 * be skipped as done, silently. A batch wholly below `base` while `highest` is far above it says so loudly.
 */
function warnIfRecreated(
  logger: Logger,
  partition: string,
  batch: readonly number[],
  window: { base: number; highest: number },
): void {
  if (batch.length === 0) return;
  const last = batch[batch.length - 1]!;
  if (last < window.base && window.highest - last > Math.max(RECREATED_TOPIC_GAP, 10 * batch.length)) {
    logger.error(
      'batch wholly below the stored base while the highest delivered offset is far above it: was the topic deleted and created again? Its records are skipped as done; run `kafka-lanes reset` for this topic if so',
      { partition, batchFrom: batch[0]!, batchTo: last, base: window.base, highest: window.highest },
    );
  }
}

