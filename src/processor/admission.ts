import type { PartitionRef } from '../completion/types';
import type { Admission, EngineTask, Invocation } from '../engine/engine';
import { applyDeadLetterPolicy, parkPayload } from '../engine/lane-heads';
import { planOffsets, topicPartitionKey, type DecodeFailure, type Delivered, type KafkaRecord, type OffsetSlot, type PartitionBatch } from '../event';
import type { HandOffOutcome } from '../handoff/types';
import { DeserializationError } from '../options/errors';
import { laneIdOf } from './lane-id';
import { decideFailure, describeError, type DeadLetterReason, type FailureDecision } from './outcome';

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
    const { topic, partition, records, failures } = batch;
    const ref: PartitionRef = { group: inv.options.group, topic, partition };
    const partitionKey = topicPartitionKey(topic, partition);

    // Records sharing an offset: identical copies run once, differing ones are all dead-lettered.
    const plan = planOffsets(records, failures);
    inv.count('duplicates', plan.duplicates);
    // A malformed record with an unreadable offset cannot get a done bit: dead-letter it and go on.
    const unplaced = inv.guard(inv.deadLetterMalformed(ref, plan.unplaced), partitionKey);

    type Entry = OffsetSlot & { lane?: string; preset?: unknown };
    const entries = plan.slots.map((slot): Entry => {
      if (slot.record === undefined) return slot;
      const entry: Entry = { ...slot };
      try {
        entry.lane = laneIdOf(slot.record, inv.options);
      } catch (error) {
        // Without its lane the record cannot run in order: it is dead-lettered like an unreadable key.
        entry.preset = new DeserializationError('key', slot.record, `keyOf threw: ${describeError(error).message}`, { cause: error });
      }
      return entry;
    });

    let result;
    try {
      result = await inv.store.admit(
        ref,
        // A payload is built only if admit finds the record's lane blocked and parks it.
        entries.map(({ offset, lane, record }) => ({ offset, lane, payload: record === undefined ? undefined : () => parkPayload(record) })),
      );
    } catch (error) {
      inv.logger.error('cannot admit batch: Redis unreachable or refused; the whole partition will be redelivered', {
        partition: partitionKey, error: describeError(error),
      });
      for (const entry of entries) inv.notHanded(ref, entry.offset);
      return { tasks: [], handOffs: unplaced };
    }
    if (result.window !== undefined) {
      inv.window(ref, result.window);
      warnIfRecreated(inv, partitionKey, entries.map((e) => e.offset), result.window);
    }
    if (result.backPressure) {
      inv.logger.warn('back-pressure: records refused at the window or parked cap; the event source will redeliver them', {
        partition: partitionKey, caps: inv.options.caps, window: result.window,
      });
    }

    const tasks: RecordTask[] = [];
    const malformed: DecodeFailure[] = [];
    const conflicts: Array<{ offset: number; versions: readonly Delivered[] }> = [];
    const heads: KafkaRecord[] = [];
    const headEntries = result.handoffHeads.values();
    entries.forEach((entry, i) => {
      const status = result.statuses[i];
      if (status === 'duplicate') inv.count('duplicates');
      else if (status === 'parked') inv.count('parked');
      else if (status === 'refused') {
        inv.count('refused');
        inv.notHanded(ref, entry.offset);
      } else if (entry.conflict !== undefined) {
        conflicts.push({ offset: entry.offset, versions: entry.conflict });
      } else if (entry.failure !== undefined) {
        malformed.push(entry.failure);
      } else if (status === 'handoff') {
        heads.push(entry.record!);
      } else {
        const record = entry.record!;
        tasks.push({ partitionKey, lane: entry.lane, offset: entry.offset, ref, record, origin: originOfRecord(record), attempt: 1, preset: entry.preset });
      }
    });
    const now = inv.now();
    // The head of a blocked lane, redelivered before its hand-off was known to complete: hand it off again
    // as Redis recorded it (a held head to the dead-letter topic, a retrying one with its attempt and due
    // time); the retry function drops whichever copy is no longer the lane's head.
    const redelivered = heads.map((record) => {
      const head = headEntries.next().value;
      if (head?.state === 'held') {
        return inv.deadLetterItem(record, originOfRecord(record), head.attempt, (head.reason || 'non-retriable') as DeadLetterReason, {
          name: 'HeldLane', message: 'dead-lettered again: the first dead-letter write was not known to complete',
        });
      }
      return inv.retryItem(record, originOfRecord(record), head?.attempt ?? 1, head?.dueAtMs ?? now, now, undefined, false);
    });
    const handOffs = inv.guard(Promise.all([
      unplaced,
      inv.writeAndMarkDone(ref, redelivered, () => {
        for (const item of redelivered) inv.count(item.kind === 'retry' ? 'retried' : 'deadLettered');
      }),
      inv.deadLetterMalformed(ref, malformed),
      inv.deadLetterConflicts(ref, conflicts),
    ]), partitionKey);
    return { tasks, handOffs };
  }

  async succeeded(inv: Invocation<RecordTask>, task: RecordTask): Promise<void> {
    inv.markDone(task.ref, task.offset);
    inv.count('done');
  }

  /** A failed attempt: block the lane and hand the record to the retry topic, or dead-letter it. */
  async failed(inv: Invocation<RecordTask>, task: RecordTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, inv.options.retry.maxAttempts);
    const blocksLane = task.lane !== undefined && (decision.action === 'retry' || inv.options.deadLetter.policy === 'hold');
    // Taken before any await: the lane's later records must not start once its head failed.
    const parked = blocksLane ? inv.drainLane(task.partitionKey, task.lane!) : [];
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
   * lane blocks, the lane's head and its parked followers are recorded in Redis first, so the retry function
   * always finds the head it is given. Throws when the record could not be handed off.
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
      ? inv.retryItem(task.record, task.origin, task.attempt + 1, inv.dueAfterFailure(task.attempt, decision.delayMs), now, described, false)
      : inv.deadLetterItem(task.record, task.origin, task.attempt, decision.reason, described);
    if (parked !== undefined) {
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
        parked.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
      );
      inv.count('parked', parked.length);
      // From here the followers are parked and done: only the head itself is left to hand off.
      parked.length = 0;
    }
    const [outcome] = await inv.write([item]);
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

function originOfRecord(record: KafkaRecord): { topic: string; partition: number; offset: number } {
  return { topic: record.topic, partition: record.partition, offset: record.offset };
}

/**
 * Topic re-created under the same name: its offsets restart below the stored `base`, and every record would
 * be skipped as done, silently. A batch wholly below `base` while `highest` is far above it says so loudly.
 */
function warnIfRecreated(inv: Invocation<RecordTask>, partition: string, offsets: readonly number[], window: { base: number; highest: number }): void {
  if (offsets.length === 0) return;
  const last = Math.max(...offsets);
  if (last < window.base && window.highest - last > Math.max(RECREATED_TOPIC_GAP, 10 * offsets.length)) {
    inv.logger.error(
      'batch wholly below the stored base while the highest delivered offset is far above it: was the topic deleted and created again? Its records are skipped as done; run `kafka-lanes reset` for this topic if so',
      { partition, batchFrom: Math.min(...offsets), batchTo: last, base: window.base, highest: window.highest },
    );
  }
}

