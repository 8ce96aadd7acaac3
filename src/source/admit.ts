import type { PartitionRef } from '../ports/partition';
import type { AdmitStatus } from '../ports/admission';
import type { LaneHead } from '../ports/lane-head';
import type { EffectsPort } from '../ports/effects';
import type { Logger } from '@aws-lambda-powertools/logger';
import { deadLetterConflicts, deadLetterMalformed, writeAndMarkDone } from '../engine/dead-letters';
import { DEFERRED_HEAD, watchCopies } from '../lanes/lane-heads';
import { describeError, type DeadLetterReason } from '../lanes/outcome';
import type { EngineTask, PathParts, RunScope } from '../engine/run-scope';
import { topicPartitionKey, type DecodeFailure, type Delivered, type KafkaRecord, type PartitionBatch } from '../event';
import { AdmitEntry, batchEntries, chunkOf, nextChunk, type RunnableEntry } from './admit-entries';

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
  const sorted = sortAdmitted(scope, ref, entries, { statuses: result.statuses, freshAbove });
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

/** `statuses`: one per entry; `freshAbove`: a record to run above it never ran before. */
function sortAdmitted(scope: AdmitScope, ref: PartitionRef, entries: readonly AdmitEntry[], { statuses, freshAbove }: { statuses: readonly AdmitStatus[]; freshAbove: number }): Sorted {
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

