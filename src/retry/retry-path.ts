import type { LaneHead } from '../completion/types';
import { NotHeadError, StaleAttemptError } from '../completion/errors';
import { sleep } from '../deadline';
import { applyDeadLetterPolicy, decodeParked, handOffNewHead, parkPayload } from '../lanes/lane-heads';
import { decideFailure, describeError } from '../lanes/outcome';
import { heldForRecovery } from './held-copy';
import { RECOVERY_RECHECK_MS } from '../completion/loss-suspect';
import type { RecordPath, RunScope } from '../engine/run-scope';
import { admitRetryBatch, type RetryTask } from './admit';

export { copyFacts, type RetryTask } from './admit';
import { claimUnorderedCopy, copyIdOf, unorderedCopyDone } from './unordered-copies';

/**
 * The path of a retry copy (see docs/ARCHITECTURE.md, "The path of a retry copy"). Each copy of a batch is admitted
 * on its own retry topic partition (dedupe, G7), waits until due (never early, G4; a copy due later than
 * the invocation can wait goes back to its tier unchanged), and runs only if its (origin offset, attempt)
 * is its lane's current head. Then:
 * - success: `release` sets the head's done bit and makes the next parked record the head (with a lease);
 *   it runs at once, in order, and the lane keeps draining while time allows;
 * - failure with attempts left: `advance` (next attempt, due time, a lease and the payload kept in Redis),
 *   then the copy is written to the tier of its delay, then the lease is taken off;
 * - dead letter: the dead-letter write, then `release` (and drain) or `hold`.
 * Every Redis step comes before the Kafka write that depends on it, and a copy's own done bit comes last,
 * so a crash between any two steps either redelivers the copy (its head check then decides) or leaves a
 * lease for the committer to re-drive.
 */
/**
 * The lane is free, or its head lies past the copy's origin: the lane moved on (a release sets the origin's done bit
 * in the same step), or Redis lost the state that held the origin and a later record made the lane anew. Only then
 * does a stale-looking copy ask whether the state was lost (`heldForRecovery`); a copy of an older attempt of the
 * head itself is stale for sure.
 */
function movedPast(task: RetryTask, head: LaneHead | undefined): boolean {
  return head === undefined || head.offset > task.origin.offset;
}

/** The copy's origin is its lane's head, held by the `hold` policy: the copy is that head's watch copy (`watchHeldHead`). */
function watching(task: RetryTask, head: LaneHead | undefined): boolean {
  return head !== undefined && head.state === 'held' && head.offset === task.origin.offset;
}

export class RetryPath implements RecordPath<RetryTask> {
  readonly admit = admitRetryBatch;

  /**
   * A copy waits for its due time, then claims its lane's head (check and take in one step: two copies of one
   * head and attempt never run at once); a drained head is the head already (the release that made it so
   * returned it) and is due at once. A copy not due yet is checked first with a read, so a stale one is dropped
   * without waiting.
   */
  async prepare(run: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.source === 'drained') return true;
    if (task.dueAtMs <= run.now()) return this.#claim(run, task);
    if (!(await this.#isHead(run, task))) return false;
    // A loop, not one sleep: Node's timers may fire a millisecond early by the wall clock that due times use,
    // and a copy woken 1 ms early would otherwise go back to its tier for a whole round trip.
    while (run.now() < task.dueAtMs && run.now() < run.stopStartingAt && !run.stopSignal.aborted) {
      await sleep(Math.min(task.dueAtMs - run.now(), run.stopStartingAt - run.now()), run.stopSignal);
    }
    if (run.now() < task.dueAtMs) {
      await this.#writeBack(run, [task]);
      return false;
    }
    // Waited: the lane may have moved meanwhile (an operator, a duplicate copy run elsewhere).
    return this.#claim(run, task);
  }

  /** The head check before a copy waits: a stale or duplicated copy does nothing (see `#stale`). */
  async #isHead(run: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.lane === undefined) return true;
    const head = await run.store.laneHead(task.originRef, task.lane);
    if (head !== undefined && head.offset === task.origin.offset && head.attempt === task.attempt && head.state === 'retrying') return true;
    // A watch copy waits for its due time like any copy, then looks again (`#claim`).
    if (watching(task, head)) return true;
    if (movedPast(task, head) && (await heldForRecovery(run, task, (held) => this.#writeBack(run, [held])))) return false;
    this.#stale(run, task, head);
    return false;
  }

  /**
   * The head check before a copy runs, as a claim until the copy's record deadline. A twin copy (the same head
   * and attempt, written twice after a crash) finding the claim alive goes back to its tier, due when the claim
   * ends: by then the head has moved on (the twin is stale) or its claimant died (the twin takes over).
   */
  async #claim(run: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.lane === undefined) return (await claimUnorderedCopy(run, task)) || (this.#stale(run, task, undefined), false);
    const now = run.now();
    const claim = await run.store.claimHead(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
      copy: copyIdOf(task),
      nowMs: now,
      untilMs: Math.min(now + run.options.recordTimeoutMs, run.abortRunningAt),
    });
    if (claim.status === 'claimed') return true;
    if (claim.status === 'not-head') {
      if (watching(task, claim.head)) return this.#watch(run, task);
      if (movedPast(task, claim.head) && (await heldForRecovery(run, task, (held) => this.#writeBack(run, [held])))) return false;
      this.#stale(run, task, claim.head);
      return false;
    }
    run.count('twins');
    run.logger.info('retry copy of a head another copy is running: written back until that run ends', {
      origin: task.origin, attempt: task.attempt, claimedUntil: new Date(claim.untilMs).toISOString(),
    });
    await this.#writeBack(run, [{ ...task, writeBack: { ...task.writeBack!, dueAtMs: Math.max(task.dueAtMs, claim.untilMs) } }]);
    return false;
  }

  /**
   * A held head's watch copy, due (README, "Durability"): it never runs the record. Once the completion group holds
   * the partition's marker a loss is found against it, so the copy is dropped; until then it goes back to its tier
   * to look again. A lane it finds gone makes it report the loss instead (`#claim`, `heldForRecovery`).
   */
  async #watch(run: RunScope<RetryTask>, task: RetryTask): Promise<false> {
    if ((await run.store.durablyMarked?.(task.originRef)) !== false) {
      run.logger.info('watch copy of a held lane dropped: the partition has its durable marker', { origin: task.origin, attempt: task.attempt });
      run.markDone(task.ref, task.offset);
      return false;
    }
    await this.#writeBack(run, [{ ...task, writeBack: { ...task.writeBack!, dueAtMs: run.now() + RECOVERY_RECHECK_MS } }]);
    return false;
  }

  /** A stale or duplicated copy does nothing and is counted; its own offset gets done. */
  #stale(run: RunScope<RetryTask>, task: RetryTask, head: LaneHead | undefined): void {
    run.count('stale');
    run.logger.info('stale retry copy dropped: not its lane head', {
      origin: task.origin, attempt: task.attempt, head: head === undefined ? 'lane free' : { offset: head.offset, attempt: head.attempt, state: head.state },
    });
    run.markDone(task.ref, task.offset);
  }

  /** Copies due later than the invocation can wait go back to their tier unchanged; their own offsets get done. */
  async #writeBack(run: RunScope<RetryTask>, tasks: readonly RetryTask[]): Promise<void> {
    const items = tasks.map((task) => task.writeBack!);
    try {
      await run.write(items);
    } catch (error) {
      for (const task of tasks) run.redeliver(task.ref, [task.offset], error);
      return;
    }
    run.count('writtenBack', tasks.length);
    for (const task of tasks) run.markDone(task.ref, task.offset);
  }

  async succeeded(run: RunScope<RetryTask>, task: RetryTask): Promise<void> {
    run.count('done');
    if (task.lane !== undefined) await this.#releaseAndDrain(run, task);
    else await unorderedCopyDone(run, task);
    if (task.source === 'copy') run.markDone(task.ref, task.offset);
  }

  /** The head is terminal: release the lane and run its next parked record at once, in order. */
  async #releaseAndDrain(run: RunScope<RetryTask>, task: RetryTask): Promise<void> {
    let next;
    try {
      next = await run.store.release(task.originRef, task.lane!, task.origin.offset, 1, run.now(), run.leaseUntilMs);
    } catch (error) {
      // Released by someone else meanwhile (an operator): nothing left to do here.
      if (error instanceof NotHeadError) return;
      throw error;
    }
    if (next === undefined) return;
    const record = decodeParked(next.payload);
    const now = run.now();
    run.enqueue([{
      partitionKey: task.partitionKey,
      lane: task.lane,
      offset: next.offset,
      ref: task.originRef,
      originRef: task.originRef,
      record,
      origin: { topic: task.originRef.topic, partition: task.originRef.partition, offset: next.offset },
      // A parked record that becomes head gets its full attempt budget.
      attempt: 1,
      source: 'drained',
      dueAtMs: now,
      firstFailureAtMs: now,
      payload: next.payload,
    }]);
  }

  async failed(run: RunScope<RetryTask>, task: RetryTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, run.options.retry.maxAttempts);
    const described = describeError(error);
    run.logger.warn('retry failed', {
      origin: task.origin, attempt: task.attempt, error: described, decision: decision.action,
      ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    if (decision.action === 'retry') {
      const item = run.copies.afterFailure(task, task.attempt, task.firstFailureAtMs, described, decision.delayMs);
      const { dueAtMs } = item;
      const next = { offset: task.origin.offset, attempt: task.attempt + 1 };
      if (task.lane !== undefined) {
        // Advanced before the write, so the new copy always finds its head; the lease and the payload kept
        // in Redis cover a crash before the write lands.
        try {
          await run.store.advance(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
            attempt: next.attempt, state: 'retrying', dueAtMs, leaseUntilMs: run.leaseUntilMs, payload: task.payload ?? parkPayload(task.record),
          });
        } catch (advanceError) {
          if (!(advanceError instanceof NotHeadError || advanceError instanceof StaleAttemptError)) throw advanceError;
          // Settled elsewhere meanwhile (a duplicate copy ran, an operator released the lane): nothing to hand off.
          run.count('stale');
          if (task.source === 'copy') run.markDone(task.ref, task.offset);
          return;
        }
      }
      const [outcome] = await run.write([item]);
      if (outcome?.status === 'refused') {
        if (task.lane !== undefined) await this.#deadLettered(run, task, next, outcome);
        run.count('deadLettered');
      } else {
        if (task.lane !== undefined) {
          await run.store.advance(task.originRef, task.lane, next, { attempt: next.attempt, state: 'retrying', dueAtMs, leaseUntilMs: 0 }).catch((e: unknown) => {
            // Moved on already (the new copy ran elsewhere): the lease is gone with the old state.
            if (!(e instanceof NotHeadError || e instanceof StaleAttemptError)) throw e;
          });
        }
        run.count('retried');
      }
    } else {
      const item = run.copies.deadLetter(task, task.attempt, decision.reason, described);
      await run.write([item]);
      run.count('deadLettered');
      if (task.lane !== undefined) await this.#deadLettered(run, task, { offset: task.origin.offset, attempt: task.attempt }, { reason: decision.reason });
    }
    if (task.source === 'copy') run.markDone(task.ref, task.offset);
  }

  /** The head is in the dead-letter topic: `hold` keeps the lane blocked, `release` moves on and drains. */
  async #deadLettered(run: RunScope<RetryTask>, task: RetryTask, head: { offset: number; attempt: number }, why: { reason: string }): Promise<void> {
    if (run.options.deadLetter.policy === 'hold') {
      await applyDeadLetterPolicy(run, task.originRef, task.lane!, head, why, task.record);
      return;
    }
    await this.#releaseAndDrain(run, task);
  }

  /** The deadline came: copies not started go back to their tier; drained heads go to the first tier, due now. */
  async deferUnstarted(run: RunScope<RetryTask>, tasks: RetryTask[]): Promise<void> {
    const copies = tasks.filter((task) => task.source === 'copy');
    const drained = tasks.filter((task) => task.source === 'drained');
    await Promise.all([
      this.#writeBack(run, copies),
      ...drained.map(async (task) => {
        try {
          await handOffNewHead(run, task.originRef, task.lane!, { offset: task.origin.offset, payload: task.payload! }, task.attempt);
          run.count('deferred');
        } catch (error) {
          // Its lease stays: the committer writes its copy once the lease expires.
          run.logger.error('cannot hand a drained lane head off; the committer re-drives it when its lease expires', {
            origin: task.origin, error: describeError(error),
          });
        }
      }),
    ]);
  }

  /** A fault of ours: a copy goes back to the event source; a drained head keeps its lease for the re-drive. */
  faulted(run: RunScope<RetryTask>, task: RetryTask, error: unknown): void {
    if (task.source === 'copy') {
      run.redeliver(task.ref, [task.offset], error);
      return;
    }
    run.logger.error('a drained lane head failed to settle; the committer re-drives it when its lease expires', {
      origin: task.origin, error: describeError(error),
    });
  }
}
