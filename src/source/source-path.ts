import { applyDeadLetterPolicy, DEFERRED_HEAD, headMoves, parkPayload, watchHeldHead } from '../lanes/lane-heads';
import { decideFailure, describeError } from '../lanes/outcome';
import { type PathParts, type RecordPath, type RunScope } from '../engine/run-scope';
import type { PartitionBatch } from '../event';
import type { HandOffItem, HandOffOutcome } from '../ports/handoff';
import { admitSourceBatch, type SourceTask } from './admit';

export { ADMIT_FIRST_CHUNK, ADMIT_MAX_CHUNK, ADMIT_ONE_CALL, RECREATED_TOPIC_GAP, type SourceTask } from './admit';

/**
 * The path of a source record (see docs/ARCHITECTURE.md, "The path of a record"): its batch is admitted
 * (`admitSourceBatch`), it runs once its lane is free, and a failure blocks its lane, parks the lane's later
 * records of the batch and hands the record to the retry or dead-letter topic before its done bit is set.
 */
export class SourcePath implements RecordPath<SourceTask> {
  readonly #parts: PathParts;

  /** `parts`: what the function gives every invocation (its options, how copies are built, its logger, effects' lifetime). */
  constructor(parts: PathParts) {
    this.#parts = parts;
  }

  admit(scope: RunScope<SourceTask>, batch: PartitionBatch): Promise<{ tasks: SourceTask[]; handOffs: Promise<unknown> }> {
    return admitSourceBatch(scope, this.#parts, batch);
  }

  succeeded(scope: RunScope<SourceTask>, task: SourceTask): void {
    scope.markDone(task.ref, task.offset);
    scope.count('done');
  }

  /** A failed attempt: block the lane and hand the record to the retry topic, or dead-letter it. */
  async failed(scope: RunScope<SourceTask>, task: SourceTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, this.#parts.options.retry.maxAttempts);
    const blocksLane = task.lane !== undefined && (decision.action === 'retry' || this.#parts.options.deadLetter.policy === 'hold');
    // Taken before any await: the lane's later records must not start once its head failed.
    const parked = blocksLane ? scope.drainLane(task.partitionKey, task.lane!) : [];
    if (task.lane !== undefined) {
      // Records of the lane in chunks still being admitted queue behind this head (it has not finished):
      // once the whole batch is admitted, they are parked with the others.
      await scope.admitted(task.partitionKey);
      if (blocksLane) parked.push(...scope.drainLane(task.partitionKey, task.lane));
    }
    const described = describeError(error);
    this.#parts.logger.warn('record failed', {
      partition: task.partitionKey, offset: task.offset, attempt: task.attempt, error: described,
      decision: decision.action, ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    const item = decision.action === 'retry'
      ? this.#parts.copies.afterFailure(task, { attempt: task.attempt, firstFailureAtMs: scope.now(), error: described, delayMs: decision.delayMs })
      : this.#parts.copies.deadLetter(task, task.attempt, decision.reason, described);
    try {
      await this.#handOff(scope, task, item, blocksLane ? parked : undefined);
    } catch (handOffError) {
      // Not handed off: the record goes back to the event source, and so does every record waiting behind
      // it in its lane (parked ones were drained above; under `release` they still wait in the scheduler),
      // or they would run before it.
      const waiting = task.lane === undefined ? [] : scope.drainLane(task.partitionKey, task.lane);
      scope.redeliver(task.ref, [task.offset, ...parked.map((p) => p.offset), ...waiting.map((w) => w.offset)], handOffError);
    }
  }

  /**
   * Writes the failed record's copy (`item`: to its retry or dead-letter topic), and only then marks it done (G3). When
   * the lane blocks (`parked` given), the lane's head and its parked followers are recorded in Redis before a retry
   * copy is written and after a dead letter is. Throws when the record could not be handed off.
   */
  async #handOff(scope: RunScope<SourceTask>, task: SourceTask, item: HandOffItem, parked: SourceTask[] | undefined): Promise<void> {
    const retrying = item.kind === 'retry';
    // A retrying head is blocked before its copy is written, so the retry function always finds the head it is
    // given. A held head is blocked only once its dead letter is written: `kafka-lanes lane release` trusts a held
    // head to be in the dead-letter topic already, and a crash (or a dead-letter topic out of reach) between the
    // two must not leave a held lane whose release would set the done bit of a record never dead-lettered. A crash
    // after the write and before the block redelivers the record: it runs again (at-least-once), its followers
    // still behind it.
    if (parked !== undefined && retrying) await this.#block(scope, task, item, parked);
    const [outcome] = await scope.write([item]);
    if (parked !== undefined && !retrying) {
      await this.#block(scope, task, item, parked);
      // Held in the partition's first minute: a watch copy stands in for the retry copy a held head lacks.
      await watchHeldHead(headMoves(scope, this.#parts), task.ref, task, task.attempt);
    }
    if (retrying && outcome?.status === 'refused' && parked !== undefined) {
      // The retry topic refused the copy for good: it is dead-lettered (stripped), so the blocked lane
      // follows the dead-letter policy, as if the record had exhausted its attempts.
      await applyDeadLetterPolicy(headMoves(scope, this.#parts), task.ref, { lane: task.lane!, head: { offset: task.offset, attempt: task.attempt + 1 }, record: task.record }, outcome);
    }
    scope.count(retrying && outcome?.status !== 'refused' ? 'retried' : 'deadLettered');
    scope.markDone(task.ref, task.offset);
  }

  /**
   * Records the failed head of a blocked lane (retrying on its copy's attempt, or held on its dead letter) and parks
   * its followers in Redis (a method, not a closure per failure: the bundle names every closure it makes). From here
   * the followers are parked and done: `followers` is emptied.
   */
  async #block(scope: RunScope<SourceTask>, task: SourceTask, item: HandOffItem, followers: SourceTask[]): Promise<void> {
    await scope.store.block(task.ref, {
      head: { lane: task.lane!, offset: task.offset, attempt: item.attempt, state: item.kind === 'retry' ? 'retrying' : 'held', dueAtMs: item.dueAtMs, reason: item.reason ?? '' },
      parked: followers.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
    });
    scope.count('parked', followers.length);
    followers.length = 0;
  }

  /** The deadline came: hand every record not started off to the retry path, attempt unchanged. */
  async deferUnstarted(scope: RunScope<SourceTask>, unstarted: SourceTask[]): Promise<void> {
    const heads: SourceTask[] = [];
    const followers = new Map<string, SourceTask[]>();
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
        await scope.store.block(head.ref, {
          head: { lane: head.lane, offset: head.offset, attempt: head.attempt, state: 'retrying', reason: DEFERRED_HEAD },
          parked: parked.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
        });
        scope.count('parked', parked.length);
        return true;
      } catch (error) {
        scope.redeliver(head.ref, [head.offset, ...parked.map((p) => p.offset)], error);
        return false;
      }
    }));
    const deferred = heads.filter((_, i) => blocked[i]);
    if (deferred.length === 0) return;
    const items = deferred.map((task) => this.#parts.copies.deferred(task, task.attempt));
    let outcomes: readonly HandOffOutcome[];
    try {
      outcomes = await scope.write(items);
    } catch (error) {
      for (const task of deferred) scope.redeliver(task.ref, [task.offset], error);
      return;
    }
    await Promise.all(deferred.map(async (task, i) => {
      const outcome = outcomes[i];
      if (outcome?.status === 'refused' && task.lane !== undefined) {
        try {
          await applyDeadLetterPolicy(headMoves(scope, this.#parts), task.ref, { lane: task.lane, head: { offset: task.offset, attempt: task.attempt }, record: task.record }, outcome);
        } catch (error) {
          scope.redeliver(task.ref, [task.offset], error);
          return;
        }
      }
      scope.count(outcome?.status === 'refused' ? 'deadLettered' : 'deferred');
      scope.markDone(task.ref, task.offset);
    }));
    this.#parts.logger.info('deadline near: records not started were handed off to the retry topic', { deferred: deferred.length });
  }
}
