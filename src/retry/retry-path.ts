import type { LaneHead, LaneHold } from '../ports/lane-head';
import { NotHeadError, StaleAttemptError } from '../ports/errors';
import { sleep } from '../deadline';
import { applyDeadLetterPolicy, decodeParked, handOffHeads, handOffNewHead, headMoves, parkPayload, type HeadCopy } from '../lanes/lane-heads';
import type { HandOffItem } from '../ports/handoff';
import { decideFailure, describeError } from '../lanes/outcome';
import { copyFindsLoss } from './kept-for-recovery';
import { judgeCopy, placeOf, recheckLater, type AskedFact, type HeadPlace, type Marked } from './copy-verdict';
import { type PathParts, type RecordPath, type RunScope } from '../engine/run-scope';
import type { PartitionBatch } from '../event';
import { admitRetryBatch, type RetryTask } from './admit';
import { copyWaitAction } from './copy-wait';

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
/** What a run holds on its lane's head: a copy its claim, a drained head the lease the release gave it. */
function holdOf(scope: Pick<RunScope<RetryTask>, 'leaseUntilMs'>, task: RetryTask): LaneHold {
  return task.from === 'drained' ? { lease: scope.leaseUntilMs } : { claim: copyIdOf(task) };
}

export class RetryPath implements RecordPath<RetryTask> {
  readonly #parts: PathParts;

  /** `parts`: what the function gives every invocation (its options, how copies are built, its logger, effects' lifetime). */
  constructor(parts: PathParts) {
    this.#parts = parts;
  }

  admit(scope: RunScope<RetryTask>, batch: PartitionBatch): Promise<{ tasks: RetryTask[]; handOffs: Promise<unknown> }> {
    return admitRetryBatch(scope, this.#parts, batch);
  }

  /**
   * A copy waits for its due time, then claims its lane's head (check and take in one step: two copies of one
   * head and attempt never run at once); a drained head is the head already (the release that made it so
   * returned it) and is due at once. A copy not due yet is checked first with a read, so a stale one is dropped
   * without waiting; then it waits here, waits suspended for a later round of its execution, or goes back to its
   * tier (`copyWaitAction`).
   */
  async prepare(scope: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.from === 'drained') return true;
    if (task.dueAtMs <= scope.now()) return this.#claim(scope, task);
    if (!(await this.#isHead(scope, task))) return false;
    const wait = copyWaitAction({ copyWait: scope.copyWait, dueAtMs: task.dueAtMs, nowMs: scope.now() });
    if (wait.action === 'suspend') {
      // Nothing changes but the figures: not done, not written back, its lane as it was. The event still holds the
      // copy, and the execution's next round admits it again (its done bit is clear) and looks at it again.
      scope.count('waiting');
      scope.waiting(wait.wakeAtMs);
      return false;
    }
    if (wait.action === 'write-back') {
      await this.#writeBack(scope, [task]);
      return false;
    }
    // The wait holds no slot: the copies behind it start meanwhile (a due one runs, one whose lane is gone reports the
    // loss at once, not when this one is due); its lane stays held, so the lane's order is kept.
    scope.leaveSlot(task);
    // A loop, not one sleep: Node's timers may fire a millisecond early by the wall clock that due times use,
    // and a copy woken 1 ms early would otherwise go back to its tier for a whole round trip.
    while (scope.now() < task.dueAtMs && scope.now() < scope.stopStartingAt && !scope.stopSignal.aborted) {
      await sleep(Math.min(task.dueAtMs - scope.now(), scope.stopStartingAt - scope.now()), scope.stopSignal);
    }
    if (scope.now() < task.dueAtMs) {
      await this.#writeBack(scope, [task]);
      return false;
    }
    await scope.takeSlot(task);
    // Waited: the lane may have moved meanwhile (an operator, a duplicate copy run elsewhere).
    return this.#claim(scope, task);
  }

  /**
   * The head check before a copy waits: a stale or duplicated copy does nothing (see `#stale`). Whatever else it finds
   * (its head, a held head it watches, a loss, its lane to watch) waits for its due time like any copy (or goes back to
   * its tier unchanged), and `#claim` judges it again when due: so a copy kept for a recovery is written back at most
   * once per recheck interval, however often its tier hands it over.
   */
  async #isHead(scope: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    const head = task.lane === undefined ? undefined : await scope.store.laneHead(task.originRef, task.lane);
    const place = task.lane === undefined ? 'head' : placeOf(task, head);
    const verdict = await judgeCopy({ due: false, place }, (fact) => this.#read(scope, task, fact, head));
    if (verdict.do !== 'stale') return true;
    this.#stale(scope, task, head);
    return false;
  }

  /**
   * The head check before a copy runs, as a claim until the copy's record deadline; then the copy does what
   * `judgeCopy` says. A twin copy (the same head and attempt, written twice after a crash) finding the claim alive
   * goes back to its tier, due when the claim ends: by then the head has moved on (the twin is stale) or its claimant
   * died (the twin takes over).
   */
  async #claim(scope: RunScope<RetryTask>, task: RetryTask): Promise<boolean> {
    const { place, head, untilMs } = await this.#claimHead(scope, task);
    const verdict = await judgeCopy({ due: true, place, claimedUntilMs: untilMs }, (fact) => this.#read(scope, task, fact, head));
    switch (verdict.do) {
      case 'run':
        return true;
      case 'stale':
        this.#stale(scope, task, head);
        return false;
      case 'unwatch':
        this.#parts.logger.info('watch copy of a held lane dropped: the partition has its durable marker', { origin: task.origin, attempt: task.attempt });
        scope.markDone(task.ref, task.offset);
        return false;
      case 'twin':
        scope.count('twins');
        this.#parts.logger.info('retry copy of a head another copy is running: written back until that run ends', {
          origin: task.origin, attempt: task.attempt, claimedUntil: new Date(verdict.untilMs).toISOString(),
        });
        await this.#writeBack(scope, [{ ...task, writeBack: recheckLater(task, scope.now(), verdict.untilMs) }]);
        return false;
      default:
        // `watch`, `keep`: back to its tier, to look again (docs/durability.md, "The first minute").
        await this.#writeBack(scope, [{ ...task, writeBack: recheckLater(task, scope.now()) }]);
        return false;
    }
  }

  /** The claim on the copy's head, as the place it found (an unordered copy's by its origin and attempt). */
  async #claimHead(scope: RunScope<RetryTask>, task: RetryTask): Promise<{ place: HeadPlace; head?: LaneHead | undefined; untilMs?: number }> {
    if (task.lane === undefined) return { place: (await claimUnorderedCopy(scope.store, this.#parts.effectsTtlMs, task)) ? 'head' : 'refused' };
    const now = scope.now();
    const claim = await scope.store.claimHead(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
      copy: copyIdOf(task),
      nowMs: now,
      untilMs: Math.min(now + this.#parts.options.recordTimeoutMs, scope.abortRunningAt),
    });
    if (claim.status === 'claimed') return { place: 'head' };
    if (claim.status === 'claimed-elsewhere') return { place: 'twin', untilMs: claim.untilMs };
    return { place: placeOf(task, claim.head), head: claim.head };
  }

  /**
   * A fact a copy rule asks for: the loss verdict (`copyFindsLoss`, which reports a loss it finds), or whether the
   * partition has its durable marker.
   */
  async #read(scope: RunScope<RetryTask>, task: RetryTask, fact: AskedFact, head: LaneHead | undefined): Promise<boolean | Marked> {
    if (fact === 'lost') return (await copyFindsLoss(scope, this.#parts.logger, task, head)) !== undefined;
    const marked = await scope.store.durablyMarked?.(task.originRef);
    return marked === undefined ? 'unknown' : marked ? 'marked' : 'unmarked';
  }

  /** A stale or duplicated copy does nothing and is counted; its own offset gets done. */
  #stale(scope: RunScope<RetryTask>, task: RetryTask, head: LaneHead | undefined): void {
    scope.count('stale');
    this.#parts.logger.info('stale retry copy dropped: not its lane head', {
      origin: task.origin, attempt: task.attempt, head: head === undefined ? 'lane free' : { offset: head.offset, attempt: head.attempt, state: head.state },
    });
    scope.markDone(task.ref, task.offset);
  }

  /** Copies due later than the invocation can wait go back to their tier unchanged; their own offsets get done. */
  async #writeBack(scope: RunScope<RetryTask>, tasks: readonly RetryTask[]): Promise<void> {
    const items = tasks.map((task) => task.writeBack!);
    try {
      await scope.write(items);
    } catch (error) {
      for (const task of tasks) scope.redeliver(task.ref, [task.offset], error);
      return;
    }
    scope.count('writtenBack', tasks.length);
    for (const task of tasks) scope.markDone(task.ref, task.offset);
  }

  async succeeded(scope: RunScope<RetryTask>, task: RetryTask): Promise<void> {
    scope.count('done');
    if (task.lane !== undefined) await this.#releaseAndDrain(scope, task);
    else await unorderedCopyDone(scope, this.#parts.effectsTtlMs, task);
    if (task.from === 'copy') scope.markDone(task.ref, task.offset);
  }

  /**
   * The head is terminal: release the lane and run its next parked record at once, in order. The release holds what
   * this run holds on the head (`hold`: by default the copy's claim, or the lease a drained head was given): a lane
   * written anew meanwhile (a recovery rebuilt it) is not this run's to move on, and its new head's copy runs it.
   */
  async #releaseAndDrain(scope: RunScope<RetryTask>, task: RetryTask, hold: LaneHold = holdOf(scope, task)): Promise<void> {
    let next;
    try {
      next = await scope.store.release(task.originRef, { lane: task.lane!, headOffset: task.origin.offset, nowMs: scope.now(), leaseUntilMs: scope.leaseUntilMs, hold });
    } catch (error) {
      // Released by someone else meanwhile (an operator), or the lane was written anew (a recovery): nothing to do here.
      if (error instanceof NotHeadError) return;
      throw error;
    }
    if (next === undefined) return;
    // The drained head's lease and payload live in Redis only, and a trigger has committed past its record. In the
    // partition's first minute no marker would find them lost: the copy that starts the drain first writes itself
    // back as the lane's watch copy (the `watch` rule of `COPY_RULES`), before its own done bit, so a crash in between redelivers it.
    if (task.from === 'copy' && (await scope.store.durablyMarked?.(task.originRef)) === false) {
      await scope.write([recheckLater(task, scope.now())]);
    }
    const record = decodeParked(next.payload);
    const now = scope.now();
    scope.enqueue([{
      partitionKey: task.partitionKey,
      lane: task.lane,
      offset: next.offset,
      ref: task.originRef,
      originRef: task.originRef,
      record,
      origin: { topic: task.originRef.topic, partition: task.originRef.partition, offset: next.offset },
      // A parked record that becomes head gets its full attempt budget.
      attempt: 1,
      from: 'drained',
      dueAtMs: now,
      firstFailureAtMs: now,
      payload: next.payload,
    }]);
  }

  async failed(scope: RunScope<RetryTask>, task: RetryTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, this.#parts.options.retry.maxAttempts);
    const described = describeError(error);
    this.#parts.logger.warn('retry failed', {
      origin: task.origin, attempt: task.attempt, error: described, decision: decision.action,
      ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    if (decision.action === 'retry') {
      const item = this.#parts.copies.afterFailure(task, { attempt: task.attempt, firstFailureAtMs: task.firstFailureAtMs, error: described, delayMs: decision.delayMs });
      scope.count(await this.#nextAttempt(scope, task, item));
    } else {
      await scope.write([this.#parts.copies.deadLetter(task, task.attempt, decision.reason, described)]);
      scope.count('deadLettered');
      if (task.lane !== undefined) await this.#deadLettered(scope, task, decision);
    }
    if (task.from === 'copy') scope.markDone(task.ref, task.offset);
  }

  /**
   * Hands the next attempt's copy off. A lane's head is advanced first, so the new copy always finds its head; the
   * lease and the payload kept in Redis cover a crash before the write lands. Then the one hand-off of lane heads
   * (`handOffHeads`: the copy written, then the lease off); a copy refused for good dead-letters the head here. What
   * to count: `stale` when the head was settled elsewhere meanwhile (nothing to hand off).
   */
  async #nextAttempt(scope: RunScope<RetryTask>, task: RetryTask, item: HandOffItem): Promise<'retried' | 'deadLettered' | 'stale'> {
    if (task.lane === undefined) {
      const [outcome] = await scope.write([item]);
      return outcome?.status === 'refused' ? 'deadLettered' : 'retried';
    }
    const next = { offset: task.origin.offset, attempt: task.attempt + 1 };
    try {
      await scope.store.advance(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
        attempt: next.attempt, state: 'retrying', dueAtMs: item.dueAtMs, leaseUntilMs: scope.leaseUntilMs, payload: task.payload ?? parkPayload(task.record),
      });
    } catch (advanceError) {
      if (!(advanceError instanceof NotHeadError || advanceError instanceof StaleAttemptError)) throw advanceError;
      // Settled elsewhere meanwhile (a duplicate copy ran, an operator released the lane): nothing to hand off.
      return 'stale';
    }
    // Refused: `advance` wrote the head anew with this invocation's lease (no claim any more).
    const refused = (_head: HeadCopy, why: { readonly reason: string }): Promise<void> => this.#deadLettered(scope, task, why, true);
    const [handedOff] = await handOffHeads(headMoves(scope, this.#parts), task.originRef, [{ lane: task.lane, head: next, copy: item, record: task.record }], refused);
    return handedOff === 'dead-lettered' ? 'deadLettered' : 'retried';
  }

  /**
   * The head is in the dead-letter topic: `hold` keeps the lane blocked, `release` moves on and drains. `advanced`: its
   * copy was refused after `advance` gave the head its next attempt and this invocation's lease.
   */
  async #deadLettered(scope: RunScope<RetryTask>, task: RetryTask, why: { readonly reason: string }, advanced = false): Promise<void> {
    if (this.#parts.options.deadLetter.policy === 'hold') {
      const head = { offset: task.origin.offset, attempt: advanced ? task.attempt + 1 : task.attempt };
      await applyDeadLetterPolicy(headMoves(scope, this.#parts), task.originRef, { lane: task.lane!, head, record: task.record }, why);
      return;
    }
    await this.#releaseAndDrain(scope, task, advanced ? { lease: scope.leaseUntilMs } : holdOf(scope, task));
  }

  /** The deadline came: copies not started go back to their tier; drained heads go to the first tier, due now. */
  async deferUnstarted(scope: RunScope<RetryTask>, tasks: RetryTask[]): Promise<void> {
    const copies = tasks.filter((task) => task.from === 'copy');
    const drained = tasks.filter((task) => task.from === 'drained');
    await Promise.all([
      this.#writeBack(scope, copies),
      ...drained.map(async (task) => {
        try {
          await handOffNewHead(headMoves(scope, this.#parts), task.originRef, task.lane!, { offset: task.origin.offset, payload: task.payload!, attempt: task.attempt });
          scope.count('deferred');
        } catch (error) {
          // Its lease stays: the committer writes its copy once the lease expires.
          this.#parts.logger.error('cannot hand a drained lane head off; the committer re-drives it when its lease expires', {
            origin: task.origin, error: describeError(error),
          });
        }
      }),
    ]);
  }

  /** A fault of ours: a copy goes back to the event source; a drained head keeps its lease for the re-drive. */
  faulted(scope: RunScope<RetryTask>, task: RetryTask, error: unknown): void {
    if (task.from === 'copy') {
      scope.redeliver(task.ref, [task.offset], error);
      return;
    }
    this.#parts.logger.error('a drained lane head failed to settle; the committer re-drives it when its lease expires', {
      origin: task.origin, error: describeError(error),
    });
  }
}
