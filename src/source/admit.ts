import type { PartitionRef } from '../ports/partition';
import { deadLetterConflicts, deadLetterMalformed, writeAndMarkDone } from '../engine/dead-letters';
import { DEFERRED_HEAD, parkPayload, watchCopies } from '../lanes/lane-heads';
import { laneIdOf, laneIdOfKey } from '../lanes/lane-id';
import { jsonText } from '../describe';
import type { LanesOptions } from '../options/lanes-options';
import { describeError, type DeadLetterReason } from '../lanes/outcome';
import type { EngineTask, PathScope } from '../engine/run-scope';
import { LazyPartitionBatch, planOffsets, topicPartitionKey, type DecodeFailure, type Delivered, type KafkaRecord, type OffsetSlot, type PartitionBatch, type RecordCoordinates } from '../event';
import { DeserializationError } from '../options/errors';

/** A delivered record of a source topic, to run as attempt 1 (or to fail at once, `preset`). */
export type SourceTask = EngineTask;

/** How far below `highest` a batch wholly below `base` must lie to look like a re-created topic. */
export const RECREATED_TOPIC_GAP = 10_000;

/**
 * Admits one partition's batch of source records: one `admit` script call per chunk (gaps bridged, duplicates
 * skipped, records of blocked lanes parked); hands off at once what needs no run (malformed records,
 * conflicting versions of an offset, a blocked lane's head redelivered).
 */
export async function admitSourceBatch(scope: PathScope<SourceTask>, batch: PartitionBatch): Promise<{ tasks: SourceTask[]; handOffs: Promise<unknown> }> {
  const { topic, partition } = batch;
  const ref: PartitionRef = { group: scope.options.group, topic, partition };
  const partitionKey = topicPartitionKey(topic, partition);
  const entries = batchEntries(batch, partitionKey, ref);
  scope.count('duplicates', entries.duplicates);
  // A malformed record with an unreadable offset cannot get a done bit: dead-letter it and go on.
  const handOffs: Array<Promise<unknown>> = [scope.guard(deadLetterMalformed(scope, ref, entries.unplaced), partitionKey)];

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
  const stepsUpTo = stepsStoredUpTo(scope, ref);
  let chunk = chunkOf(scope, entries, 0, size);
  while (chunk.length > 0) {
    const last = from + chunk.length >= count;
    // A chunk's records start as soon as its reply comes (the last chunk's are the engine's to add).
    const admitting = admitChunk(scope, ref, partitionKey, chunk, from === 0 ? entries.offsets : undefined, stepsUpTo).then((admitted) => {
      if (admitted !== undefined && !last) scope.enqueue(admitted.tasks);
      return admitted;
    });
    from += chunk.length;
    size = Math.min(size * 2, ADMIT_MAX_CHUNK);
    const next = last ? [] : await nextChunk(scope, entries, from, from + size);
    const admitted = await admitting;
    if (admitted === undefined) {
      // Redis refused or back-pressure: the rest of the batch is not admitted now; the event source
      // redelivers it (a later record of a lane must not run while an earlier one was refused).
      refuseRest(scope, ref, entries.offsets.slice(from));
      break;
    }
    if (admitted.handOffs !== undefined) handOffs.push(admitted.handOffs);
    if (last) tasks = admitted.tasks;
    if (admitted.stop) {
      refuseRest(scope, ref, entries.offsets.slice(from));
      break;
    }
    chunk = next;
  }
  return { tasks, handOffs: Promise.all(handOffs) };
}

/**
 * Admits one chunk: its tasks, the hand-offs it found, and `stop` when the rest of the batch must not be
 * admitted in this invocation (back-pressure); `undefined` when Redis could not be reached.
 */
async function admitChunk(
  scope: PathScope<SourceTask>,
  ref: PartitionRef,
  partitionKey: string,
  entries: readonly AdmitEntry[],
  /** The offsets of the whole batch, given with its first chunk only. */
  batch: readonly number[] | undefined,
  stepsUpTo: Promise<number | undefined>,
): Promise<{ tasks: SourceTask[]; handOffs?: Promise<unknown>; stop: boolean } | undefined> {
  let result;
  try {
    result = await scope.store.admit(ref, entries);
  } catch (error) {
    scope.logger.error('cannot admit batch: Redis unreachable or refused; the whole partition will be redelivered', {
      partition: partitionKey, error: describeError(error),
    });
    scope.redeliver(ref, entries.map((entry) => entry.offset));
    return undefined;
  }
  if (result.window !== undefined) {
    scope.window(ref, result.window);
    if (batch !== undefined) warnIfRecreated(scope, partitionKey, batch, result.window);
  }
  if (result.backPressure) {
    scope.logger.warn('back-pressure: records refused at the window or parked cap; the event source will redeliver them', {
      partition: partitionKey, caps: scope.options.caps, window: result.window,
    });
  }

  const tasks: SourceTask[] = [];
  let malformed: DecodeFailure[] | undefined;
  let conflicts: Array<{ offset: number; versions: readonly Delivered[] }> | undefined;
  let heads: RunnableEntry[] | undefined;
  const { statuses } = result;
  const storedUpTo = await stepsUpTo;
  // Above both, a record ran under no state that is kept, and no step result of it is stored.
  const freshAbove = result.seenUpTo === undefined || storedUpTo === undefined ? Infinity : Math.max(result.seenUpTo, storedUpTo);
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i]!;
    const status = statuses[i];
    if (status === 'run' && entry.runnable) {
      entry.fresh = entry.offset > freshAbove;
      tasks.push(entry as RunnableEntry);
    } else if (status === 'duplicate') scope.count('duplicates');
    else if (status === 'parked') scope.count('parked');
    else if (status === 'refused') {
      scope.count('refused');
      scope.redeliver(ref, [entry.offset]);
    } else if (entry.conflict !== undefined) {
      (conflicts ??= []).push({ offset: entry.offset, versions: entry.conflict });
    } else if (entry.failure !== undefined) {
      (malformed ??= []).push(entry.failure);
    } else if (status === 'handoff') {
      (heads ??= []).push(entry as RunnableEntry);
    }
  }
  if (malformed === undefined && conflicts === undefined && heads === undefined) return { tasks, stop: result.backPressure };
  const now = scope.now();
  // The head of a blocked lane, redelivered before its hand-off was known to complete: hand it off again
  // as Redis recorded it (a held head to the dead-letter topic, a retrying one with its attempt and due
  // time); the retry function drops whichever copy is no longer the lane's head.
  const headEntries = result.handoffHeads.values();
  const redelivered = (heads ?? []).map(({ record, lane }) => {
    const head = headEntries.next().value;
    if (head?.state === 'held') {
      return scope.copies.deadLetter({ record, origin: originOfRecord(record), lane }, head.attempt, (head.reason || 'non-retriable') as DeadLetterReason, {
        name: 'HeldLane', message: 'dead-lettered again: the first dead-letter write was not known to complete',
      });
    }
    const basis = { record, origin: originOfRecord(record), lane };
    // A head blocked at the deadline never ran: it goes on as deferred (attempt unchanged), as it first did.
    if (head?.reason === DEFERRED_HEAD) return scope.copies.deferred(basis, head.attempt, head.dueAtMs);
    return scope.copies.retry(basis, { attempt: head?.attempt ?? 1, dueAtMs: head?.dueAtMs ?? now, firstFailureAtMs: now });
  });
  // A held head dead-lettered again in the partition's first minute gets its watch copy again (`watchHeldHead`).
  const heldAgain = redelivered.filter((item) => item.kind === 'dead-letter' && item.lane !== undefined);
  const watches = await watchCopies(scope, ref, heldAgain.map((item) => ({ basis: item, attempt: item.attempt })), now);
  const handOffs = scope.guard(Promise.all([
    writeAndMarkDone(scope, ref, [...redelivered, ...watches], () => {
      for (const item of redelivered) scope.count(item.kind === 'dead-letter' ? 'deadLettered' : item.deferred === true ? 'deferred' : 'retried');
    }),
    deadLetterMalformed(scope, ref, malformed ?? []),
    deadLetterConflicts(scope, ref, conflicts ?? []),
  ]), partitionKey);
  return { tasks, handOffs, stop: result.backPressure };
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

  constructor(partitionKey: string, ref: PartitionRef, offset: number, record: KafkaRecord | undefined, slot?: OffsetSlot, batch?: LazyPartitionBatch, index = -1) {
    this.partitionKey = partitionKey;
    this.ref = ref;
    this.offset = offset;
    this.#record = record;
    this.failure = slot?.failure;
    this.conflict = slot?.conflict;
    this.#batch = slot === undefined ? batch : undefined;
    this.#index = index;
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

function batchEntries(batch: PartitionBatch, partitionKey: string, ref: PartitionRef): BatchEntries {
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
            ? new AdmitEntry(partitionKey, ref, offsets[i]!, undefined, undefined, lazy, i)
            : new AdmitEntry(partitionKey, ref, offsets[i]!, undefined, { offset: offsets[i]!, failure });
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
    entries[i] = plain ? new AdmitEntry(partitionKey, ref, slot.offset, slot as KafkaRecord) : new AdmitEntry(partitionKey, ref, slot.offset, slot.record, slot);
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
async function nextChunk(scope: PathScope<SourceTask>, entries: BatchEntries, from: number, to: number): Promise<AdmitEntry[]> {
  const end = Math.min(to, entries.offsets.length);
  const chunk: AdmitEntry[] = [];
  for (let at = from; at < end; at += PREPARE_SLICE) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const entry of chunkOf(scope, entries, at, Math.min(end, at + PREPARE_SLICE))) chunk.push(entry);
  }
  return chunk;
}

/** Records of a chunk made at once while the call before is in flight. */
const PREPARE_SLICE = 512;

/** The entries of offsets [from, to) with their lanes, found just before they are admitted. */
function chunkOf(scope: PathScope<SourceTask>, entries: BatchEntries, from: number, to: number): AdmitEntry[] {
  const chunk = entries.slice(from, to);
  assignLanes(scope, chunk);
  return chunk;
}

/** The lanes of a chunk's records, found just before it is admitted (the first chunk need not wait for the rest). */
function assignLanes(scope: PathScope<SourceTask>, entries: readonly AdmitEntry[]): void {
  for (const entry of entries) {
    if (!entry.runnable) continue;
    try {
      entry.lane = entry.laneOf(scope.options);
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
function stepsStoredUpTo(scope: PathScope<SourceTask>, ref: PartitionRef): Promise<number | undefined> {
  const read = scope.effects?.stepsStoredUpTo?.(ref);
  return read === undefined ? Promise.resolve(undefined) : read.catch(() => undefined);
}

/** Records of a batch not admitted now (refused, or behind a refusal): the event source redelivers them. */
function refuseRest(scope: PathScope<SourceTask>, ref: PartitionRef, rest: readonly number[]): void {
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
  scope: PathScope<SourceTask>,
  partition: string,
  batch: readonly number[],
  window: { base: number; highest: number },
): void {
  if (batch.length === 0) return;
  const last = batch[batch.length - 1]!;
  if (last < window.base && window.highest - last > Math.max(RECREATED_TOPIC_GAP, 10 * batch.length)) {
    scope.logger.error(
      'batch wholly below the stored base while the highest delivered offset is far above it: was the topic deleted and created again? Its records are skipped as done; run `kafka-lanes reset` for this topic if so',
      { partition, batchFrom: batch[0]!, batchTo: last, base: window.base, highest: window.highest },
    );
  }
}

