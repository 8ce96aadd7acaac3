import type { PartitionRef } from '../completion/types';
import type { Admission, EngineTask, Invocation } from '../engine/engine';
import { applyDeadLetterPolicy, parkPayload } from '../engine/lane-heads';
import { planOffsets, topicPartitionKey, type DecodeFailure, type Delivered, type KafkaRecord, type OffsetSlot, type PartitionBatch, type RecordCoordinates } from '../event';
import type { HandOffOutcome } from '../handoff/types';
import { DeserializationError } from '../options/errors';
import { laneIdOf } from '../engine/lane-id';
import { decideFailure, describeError, type DeadLetterReason, type FailureDecision } from '../engine/outcome';

/** A delivered record of a source topic, to run as attempt 1 (or to fail at once, `preset`). */
export type RecordTask = EngineTask;

/** How far below `highest` a batch wholly below `base` must lie to look like a re-created topic. */
export const RECREATED_TOPIC_GAP = 10_000;

/**
 * The processor's admission (DESIGN.md section 4, steps 1 to 4): one `admit` per partition (gaps bridged,
 * duplicates skipped, blocked lanes parked), then a failure blocks its lane, parks the lane's later records
 * of the batch and hands the record to the retry or dead-letter topic before its done bit is set (G3).
 */
export class ProcessorAdmission implements Admission<RecordTask> {
  async admit(inv: Invocation<RecordTask>, batch: PartitionBatch): Promise<{ tasks: RecordTask[]; handOffs: Promise<unknown> }> {
    const { topic, partition } = batch;
    const ref: PartitionRef = { group: inv.options.group, topic, partition };
    const partitionKey = topicPartitionKey(topic, partition);
    const { entries, unplaced, duplicates } = admitEntries(inv, batch, partitionKey, ref);
    inv.count('duplicates', duplicates);
    // A malformed record with an unreadable offset cannot get a done bit: dead-letter it and go on.
    const handOffs: Array<Promise<unknown>> = [inv.guard(inv.deadLetterMalformed(ref, unplaced), partitionKey)];

    // One atomic script call per chunk, in offset order: the records of the first (small) chunk start
    // while the later ones are admitted. Order per lane holds: a lane's records are queued behind its
    // running head in the scheduler, and a head that fails waits for the whole admission before it parks
    // the lane's followers (`failed`).
    let from = 0;
    // A small batch is admitted in one call: chunks would cost round trips and save little time.
    let size = entries.length <= ADMIT_ONE_CALL ? entries.length : ADMIT_FIRST_CHUNK;
    let tasks: RecordTask[] = [];
    while (from < entries.length) {
      const chunk = entries.slice(from, from + size);
      assignLanes(inv, chunk);
      const last = from + chunk.length >= entries.length;
      const admitted = await this.#admitChunk(inv, ref, partitionKey, chunk, from === 0 ? entries : undefined);
      from += chunk.length;
      size = Math.min(size * 4, ADMIT_MAX_CHUNK);
      if (admitted === undefined) {
        // Redis refused or back-pressure: the rest of the batch is not admitted now; the event source
        // redelivers it (a later record of a lane must not run while an earlier one was refused).
        for (const entry of entries.slice(from)) {
          inv.count('refused');
          inv.notHanded(ref, entry.offset);
        }
        break;
      }
      if (admitted.handOffs !== undefined) handOffs.push(admitted.handOffs);
      if (last) tasks = admitted.tasks;
      else inv.enqueue(admitted.tasks);
      if (admitted.stop) {
        for (const entry of entries.slice(from)) {
          inv.count('refused');
          inv.notHanded(ref, entry.offset);
        }
        break;
      }
    }
    return { tasks, handOffs: Promise.all(handOffs) };
  }

  /**
   * Admits one chunk: its tasks, the hand-offs it found, and `stop` when the rest of the batch must not be
   * admitted in this invocation (back-pressure); `undefined` when Redis could not be reached.
   */
  async #admitChunk(
    inv: Invocation<RecordTask>,
    ref: PartitionRef,
    partitionKey: string,
    entries: readonly AdmitEntry[],
    /** The whole batch, given with its first chunk only. */
    batch: readonly AdmitEntry[] | undefined,
  ): Promise<{ tasks: RecordTask[]; handOffs?: Promise<unknown>; stop: boolean } | undefined> {
    let result;
    try {
      result = await inv.store.admit(ref, entries);
    } catch (error) {
      inv.logger.error('cannot admit batch: Redis unreachable or refused; the whole partition will be redelivered', {
        partition: partitionKey, error: describeError(error),
      });
      for (const entry of entries) inv.notHanded(ref, entry.offset);
      return undefined;
    }
    if (result.window !== undefined) {
      inv.window(ref, result.window);
      if (batch !== undefined) warnIfRecreated(inv, partitionKey, batch, result.window);
    }
    if (result.backPressure) {
      inv.logger.warn('back-pressure: records refused at the window or parked cap; the event source will redeliver them', {
        partition: partitionKey, caps: inv.options.caps, window: result.window,
      });
    }

    const tasks: RecordTask[] = [];
    let malformed: DecodeFailure[] | undefined;
    let conflicts: Array<{ offset: number; versions: readonly Delivered[] }> | undefined;
    let heads: KafkaRecord[] | undefined;
    const { statuses } = result;
    for (let i = 0; i < entries.length; i += 1) {
      const entry = entries[i]!;
      const status = statuses[i];
      if (status === 'run' && entry.record !== undefined) {
        tasks.push(entry as RunnableEntry);
      } else if (status === 'duplicate') inv.count('duplicates');
      else if (status === 'parked') inv.count('parked');
      else if (status === 'refused') {
        inv.count('refused');
        inv.notHanded(ref, entry.offset);
      } else if (entry.conflict !== undefined) {
        (conflicts ??= []).push({ offset: entry.offset, versions: entry.conflict });
      } else if (entry.failure !== undefined) {
        (malformed ??= []).push(entry.failure);
      } else if (status === 'handoff') {
        (heads ??= []).push(entry.record!);
      }
    }
    if (malformed === undefined && conflicts === undefined && heads === undefined) return { tasks, stop: result.backPressure };
    const now = inv.now();
    // The head of a blocked lane, redelivered before its hand-off was known to complete: hand it off again
    // as Redis recorded it (a held head to the dead-letter topic, a retrying one with its attempt and due
    // time); the retry function drops whichever copy is no longer the lane's head.
    const headEntries = result.handoffHeads.values();
    const redelivered = (heads ?? []).map((record) => {
      const head = headEntries.next().value;
      if (head?.state === 'held') {
        return inv.deadLetterItem(record, originOfRecord(record), head.attempt, (head.reason || 'non-retriable') as DeadLetterReason, {
          name: 'HeldLane', message: 'dead-lettered again: the first dead-letter write was not known to complete',
        });
      }
      return inv.retryItem(record, originOfRecord(record), head?.attempt ?? 1, head?.dueAtMs ?? now, now, undefined, false);
    });
    const handOffs = inv.guard(Promise.all([
      inv.writeAndMarkDone(ref, redelivered, () => {
        for (const item of redelivered) inv.count(item.kind === 'retry' ? 'retried' : 'deadLettered');
      }),
      inv.deadLetterMalformed(ref, malformed ?? []),
      inv.deadLetterConflicts(ref, conflicts ?? []),
    ]), partitionKey);
    return { tasks, handOffs, stop: result.backPressure };
  }

  succeeded(inv: Invocation<RecordTask>, task: RecordTask): void {
    inv.markDone(task.ref, task.offset);
    inv.count('done');
  }

  /** A failed attempt: block the lane and hand the record to the retry topic, or dead-letter it. */
  async failed(inv: Invocation<RecordTask>, task: RecordTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, inv.options.retry.maxAttempts);
    const blocksLane = task.lane !== undefined && (decision.action === 'retry' || inv.options.deadLetter.policy === 'hold');
    // Taken before any await: the lane's later records must not start once its head failed.
    const parked = blocksLane ? inv.drainLane(task.partitionKey, task.lane!) : [];
    if (task.lane !== undefined) {
      // Records of the lane in chunks still being admitted queue behind this head (it has not finished):
      // once the whole batch is admitted, they are parked with the others.
      await inv.admitted(task.partitionKey);
      if (blocksLane) parked.push(...inv.drainLane(task.partitionKey, task.lane));
    }
    try {
      await this.#handOff(inv, task, error, decision, blocksLane ? parked : undefined);
    } catch (handOffError) {
      // Not handed off: the record goes back to the event source, and so does every record waiting behind
      // it in its lane (parked ones were drained above; under `release` they still wait in the scheduler),
      // or they would run before it.
      const waiting = task.lane === undefined ? [] : inv.drainLane(task.partitionKey, task.lane);
      inv.handOffFailed(task.ref, [task.offset, ...parked.map((p) => p.offset), ...waiting.map((w) => w.offset)], handOffError);
    }
  }

  /**
   * Writes the failed record to its retry or dead-letter topic, and only then marks it done (G3). When the
   * lane blocks, the lane's head and its parked followers are recorded in Redis before a retry copy is written
   * and after a dead letter is. Throws when the record could not be handed off.
   */
  async #handOff(inv: Invocation<RecordTask>, task: RecordTask, error: unknown, decision: FailureDecision, parked: RecordTask[] | undefined): Promise<void> {
    const now = inv.now();
    const described = describeError(error);
    inv.logger.warn('record failed', {
      partition: task.partitionKey, offset: task.offset, attempt: task.attempt, error: described,
      decision: decision.action, ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    const retrying = decision.action === 'retry';
    const item = retrying
      ? inv.retryAfterFailure(task.record, task.origin, task.attempt, now, described, decision.delayMs)
      : inv.deadLetterItem(task.record, task.origin, task.attempt, decision.reason, described);
    const block = async (followers: RecordTask[]): Promise<void> => {
      await inv.store.block(
        task.ref,
        {
          lane: task.lane!,
          offset: task.offset,
          attempt: retrying ? task.attempt + 1 : task.attempt,
          state: retrying ? 'retrying' : 'held',
          dueAtMs: item.dueAtMs,
          reason: item.reason ?? '',
        },
        followers.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
      );
      inv.count('parked', followers.length);
      // From here the followers are parked and done: only the head itself is left to hand off.
      followers.length = 0;
    };
    // A retrying head is blocked before its copy is written, so the retry function always finds the head it is
    // given. A held head is blocked only once its dead letter is written: `kafka-lanes lane release` trusts a held
    // head to be in the dead-letter topic already, and a crash (or a dead-letter topic out of reach) between the
    // two must not leave a held lane whose release would set the done bit of a record never dead-lettered. A crash
    // after the write and before the block redelivers the record: it runs again (at-least-once), its followers
    // still behind it.
    if (parked !== undefined && retrying) await block(parked);
    const [outcome] = await inv.write([item]);
    if (parked !== undefined && !retrying) await block(parked);
    if (retrying && outcome?.status === 'refused' && parked !== undefined) {
      // The retry topic refused the copy for good: it is dead-lettered (stripped), so the blocked lane
      // follows the dead-letter policy, as if the record had exhausted its attempts.
      await applyDeadLetterPolicy(inv, task.ref, task.lane!, { offset: task.offset, attempt: task.attempt + 1 }, outcome);
    }
    inv.count(retrying && outcome?.status !== 'refused' ? 'retried' : 'deadLettered');
    inv.markDone(task.ref, task.offset);
  }

  /** The deadline came: hand every record not started off to the retry path, attempt unchanged. */
  async deferUnstarted(inv: Invocation<RecordTask>, unstarted: RecordTask[]): Promise<void> {
    const now = inv.now();
    const heads: RecordTask[] = [];
    const followers = new Map<string, RecordTask[]>();
    for (const task of unstarted) {
      if (task.lane === undefined) {
        heads.push(task);
        continue;
      }
      const laneKey = `${task.partitionKey}\n${task.lane}`;
      const queue = followers.get(laneKey);
      if (queue === undefined) {
        followers.set(laneKey, []);
        heads.push(task);
      } else {
        queue.push(task);
      }
    }
    const blocked = await Promise.all(heads.map(async (head) => {
      if (head.lane === undefined) return true;
      const parked = followers.get(`${head.partitionKey}\n${head.lane}`) ?? [];
      try {
        await inv.store.block(
          head.ref,
          { lane: head.lane, offset: head.offset, attempt: head.attempt, state: 'retrying' },
          parked.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
        );
        inv.count('parked', parked.length);
        return true;
      } catch (error) {
        inv.handOffFailed(head.ref, [head.offset, ...parked.map((p) => p.offset)], error);
        return false;
      }
    }));
    const deferred = heads.filter((_, i) => blocked[i]);
    if (deferred.length === 0) return;
    const items = deferred.map((task) => inv.retryItem(task.record, task.origin, task.attempt, now, now, undefined, true));
    let outcomes: readonly HandOffOutcome[];
    try {
      outcomes = await inv.write(items);
    } catch (error) {
      for (const task of deferred) inv.handOffFailed(task.ref, [task.offset], error);
      return;
    }
    await Promise.all(deferred.map(async (task, i) => {
      const outcome = outcomes[i];
      if (outcome?.status === 'refused' && task.lane !== undefined) {
        try {
          await applyDeadLetterPolicy(inv, task.ref, task.lane, { offset: task.offset, attempt: task.attempt }, outcome);
        } catch (error) {
          inv.handOffFailed(task.ref, [task.offset], error);
          return;
        }
      }
      inv.count(outcome?.status === 'refused' ? 'deadLettered' : 'deferred');
      inv.markDone(task.ref, task.offset);
    }));
    inv.logger.info('deadline near: records not started were handed off to the retry topic', { deferred: deferred.length });
  }
}

/** A batch of at most this many records is admitted in one call. */
export const ADMIT_ONE_CALL = 2_048;
/** The first chunk of a larger batch: small, so the first records start soon. */
export const ADMIT_FIRST_CHUNK = 256;
/** Chunks grow fourfold up to this size (a batch of 10,000: 256, 1,024, 4,096, 4,624). */
export const ADMIT_MAX_CHUNK = 8_192;

/**
 * One offset of a batch to admit: a record to run (with its lane), or a malformed record or conflicting
 * versions to dead-letter. Its `payload` (what a park list keeps) is built only if Redis asks for it.
 */
class AdmitEntry {
  readonly partitionKey: string;
  readonly ref: PartitionRef;
  readonly offset: number;
  readonly record: KafkaRecord | undefined;
  readonly failure: DecodeFailure | undefined;
  readonly conflict: readonly Delivered[] | undefined;
  readonly attempt = 1;
  lane: string | undefined = undefined;
  preset: unknown = undefined;
  #origin: RecordCoordinates | undefined = undefined;

  constructor(partitionKey: string, ref: PartitionRef, offset: number, record: KafkaRecord | undefined, slot?: OffsetSlot) {
    this.partitionKey = partitionKey;
    this.ref = ref;
    this.offset = offset;
    this.record = record;
    this.failure = slot?.failure;
    this.conflict = slot?.conflict;
  }

  /** A source record's origin is where it was read. */
  get origin(): RecordCoordinates {
    return (this.#origin ??= { topic: this.ref.topic, partition: this.ref.partition, offset: this.offset });
  }

  get payload(): string | undefined {
    return this.record === undefined ? undefined : parkPayload(this.record);
  }
}

/** An admitted entry with a record to run: the task the engine schedules. */
type RunnableEntry = AdmitEntry & { readonly record: KafkaRecord };

/**
 * A batch's offsets, each once and ascending (lanes are found per chunk, `assignLanes`). Records sharing an offset are planned by
 * `planOffsets` (identical copies run once, differing ones are all dead-lettered); a batch without
 * failures and with strictly ascending offsets (every batch AWS sends) skips that work.
 */
function admitEntries(
  inv: Invocation<RecordTask>,
  batch: PartitionBatch,
  partitionKey: string,
  ref: PartitionRef,
): { entries: AdmitEntry[]; unplaced: DecodeFailure[]; duplicates: number } {
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
  return { entries, unplaced: plan?.unplaced ?? [], duplicates: plan?.duplicates ?? 0 };
}

/** The lanes of a chunk's records, found just before it is admitted (the first chunk need not wait for the rest). */
function assignLanes(inv: Invocation<RecordTask>, entries: readonly AdmitEntry[]): void {
  for (const entry of entries) {
    if (entry.record === undefined) continue;
    try {
      entry.lane = laneIdOf(entry.record, inv.options);
    } catch (error) {
      // Without its lane the record cannot run in order: it is dead-lettered like an unreadable key.
      entry.preset = new DeserializationError('key', entry.record, `keyOf threw: ${describeError(error).message}`, { cause: error });
    }
  }
}

function originOfRecord(record: KafkaRecord): { topic: string; partition: number; offset: number } {
  return { topic: record.topic, partition: record.partition, offset: record.offset };
}

/**
 * Topic re-created under the same name: its offsets restart below the stored `base`, and every record would
 * be skipped as done, silently. A batch wholly below `base` while `highest` is far above it says so loudly.
 */
function warnIfRecreated(
  inv: Invocation<RecordTask>,
  partition: string,
  batch: readonly AdmitEntry[],
  window: { base: number; highest: number },
): void {
  if (batch.length === 0) return;
  const last = batch[batch.length - 1]!.offset;
  if (last < window.base && window.highest - last > Math.max(RECREATED_TOPIC_GAP, 10 * batch.length)) {
    inv.logger.error(
      'batch wholly below the stored base while the highest delivered offset is far above it: was the topic deleted and created again? Its records are skipped as done; run `kafka-lanes reset` for this topic if so',
      { partition, batchFrom: batch[0]!.offset, batchTo: last, base: window.base, highest: window.highest },
    );
  }
}

