import type { LaneHead, PartitionRef } from '../completion/types';
import { NotHeadError, StaleAttemptError } from '../completion/errors';
import { sleep } from '../deadline';
import type { Admission, EngineTask, Invocation } from '../engine/engine';
import { applyDeadLetterPolicy, decodeParked, handOffNewHead, parkPayload } from '../engine/lane-heads';
import { topicPartitionKey, type KafkaRecord, type PartitionBatch, type RecordCoordinates } from '../event';
import { HEADER_PREFIX, readHandOffHeaders } from '../handoff/headers';
import type { HandOffItem } from '../handoff/types';
import { retryTierOf } from '../options/names';
import { laneIdOf } from '../engine/lane-id';
import { decideFailure, describeError } from '../engine/outcome';
import { claimUnorderedCopy, copyIdOf, unorderedCopyDone } from './unordered-copies';

/**
 * A task of the retry function: a retry copy read from a tier (`copy`), or a lane's next head taken from
 * its park list after the lane was released (`drained`, run inline, in order).
 */
export interface RetryTask extends EngineTask {
  /** The partition of the origin: where the lane, its head and its park list live. */
  readonly originRef: PartitionRef;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: number };
  readonly source: 'copy' | 'drained';
  /** Not before this (epoch ms, G4). */
  readonly dueAtMs: number;
  readonly firstFailureAtMs: number;
  /** A copy as read: written back unchanged when it is due later than the invocation can wait. */
  readonly writeBack?: HandOffItem;
  /** A drained head's payload as its park list keeps it. */
  readonly payload?: string;
}

/** What a well-formed retry copy's headers say. */
interface CopyFacts {
  readonly origin: { topic: string; partition: number; offset: number };
  readonly attempt: number;
  readonly dueAtMs: number;
  readonly firstFailureAtMs: number;
  readonly error: { name: string; message: string } | undefined;
  readonly deferred: boolean;
}

/**
 * Reads a retry copy's framework headers; a string says what is wrong with them (the copy is dead-lettered
 * with it as the reason).
 */
export function copyFacts(record: KafkaRecord, tiers: readonly string[], group: string): CopyFacts | string {
  const tier = retryTierOf(group, record.topic);
  if (tier === undefined || !tiers.includes(tier)) {
    return `unknown retry tier \`${tier ?? record.topic}\`: the configured tiers are ${tiers.map((t) => `\`${t}\``).join(', ')}`;
  }
  const h = readHandOffHeaders(record.headers);
  const missing = (
    [
      ['lanes-origin-topic', h.originTopic],
      ['lanes-origin-partition', h.originPartition],
      ['lanes-origin-offset', h.originOffset],
      ['lanes-attempt', h.attempt],
      ['lanes-due-at', h.dueAtMs],
    ] as const
  ).filter(([, value]) => value === undefined).map(([name]) => `\`${name}\``);
  if (missing.length > 0) return `retry copy without valid ${missing.join(', ')} header(s)`;
  if (h.kind !== 'retry') return `retry copy whose \`lanes-kind\` is not \`retry\``;
  if (h.attempt! < 1) return `retry copy with attempt ${h.attempt}`;
  return {
    origin: { topic: h.originTopic!, partition: h.originPartition!, offset: h.originOffset! },
    attempt: h.attempt!,
    dueAtMs: h.dueAtMs!,
    firstFailureAtMs: h.firstFailureAtMs ?? h.dueAtMs!,
    error: h.errorName === undefined && h.errorMessage === undefined ? undefined : { name: h.errorName ?? 'Error', message: h.errorMessage ?? '' },
    deferred: h.deferred === true,
  };
}

/**
 * The retry function's admission (DESIGN.md section 4, retry function). Each copy of a batch is admitted
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
export class RetryAdmission implements Admission<RetryTask> {
  async admit(inv: Invocation<RetryTask>, batch: PartitionBatch): Promise<{ tasks: RetryTask[]; handOffs: Promise<unknown> }> {
    const { topic, partition, records, failures } = batch;
    const ref: PartitionRef = { group: inv.options.group, topic, partition };
    const partitionKey = topicPartitionKey(topic, partition);
    const unplaced = inv.guard(inv.deadLetterMalformed(ref, failures.filter((failure) => failure.offset === undefined)), partitionKey);
    const placedFailures = failures.filter((failure) => failure.offset !== undefined);
    const offsets = [...new Set([...records.map((r) => r.offset), ...placedFailures.map((f) => f.offset!)])].sort((a, b) => a - b);

    let result;
    try {
      // The copies' own offsets: the retry topic's frontier and dedupe. Lanes live on the origin partitions.
      result = await inv.store.admit(ref, offsets.map((offset) => ({ offset })));
    } catch (error) {
      inv.logger.error('cannot admit retry batch: Redis unreachable or refused; the whole partition will be redelivered', {
        partition: partitionKey, error: describeError(error),
      });
      for (const offset of offsets) inv.notHanded(ref, offset);
      return { tasks: [], handOffs: unplaced };
    }
    if (result.window !== undefined) inv.window(ref, result.window);
    const status = new Map(offsets.map((offset, i) => [offset, result.statuses[i]]));
    for (const offset of offsets) {
      const s = status.get(offset);
      if (s === 'duplicate') inv.count('duplicates');
      else if (s === 'refused') {
        inv.count('refused');
        inv.notHanded(ref, offset);
      }
    }
    const runnable = (offset: number): boolean => status.get(offset) === 'run';

    const tasks: RetryTask[] = [];
    const malformed: HandOffItem[] = [];
    const seen = new Set<number>();
    for (const record of records) {
      if (!runnable(record.offset) || seen.has(record.offset)) continue;
      seen.add(record.offset);
      const facts = copyFacts(record, inv.options.retry.tiers, inv.options.group);
      if (typeof facts === 'string') {
        malformed.push(this.#malformed(inv, record, facts));
        continue;
      }
      const originRef: PartitionRef = { group: inv.options.group, topic: facts.origin.topic, partition: facts.origin.partition };
      let lane: string | undefined;
      try {
        lane = laneIdOf(originalOf(record, facts.origin), inv.options);
      } catch (error) {
        malformed.push(this.#malformed(inv, record, `keyOf threw: ${describeError(error).message}`));
        continue;
      }
      tasks.push({
        partitionKey: topicPartitionKey(originRef.topic, originRef.partition),
        lane,
        offset: record.offset,
        ref,
        originRef,
        record,
        origin: facts.origin,
        attempt: facts.attempt,
        source: 'copy',
        dueAtMs: facts.dueAtMs,
        firstFailureAtMs: facts.firstFailureAtMs,
        writeBack: {
          record,
          origin: facts.origin,
          kind: 'retry',
          topic: record.topic,
          attempt: facts.attempt,
          dueAtMs: facts.dueAtMs,
          firstFailureAtMs: facts.firstFailureAtMs,
          error: facts.error,
          deferred: facts.deferred,
        },
      });
    }
    const handOffs = inv.guard(Promise.all([
      unplaced,
      inv.writeAndMarkDone(ref, malformed, () => inv.count('deadLettered', malformed.length)),
      inv.deadLetterMalformed(ref, placedFailures.filter((f) => runnable(f.offset!))),
    ]), partitionKey);
    return { tasks, handOffs };
  }

  #malformed(inv: Invocation<RetryTask>, record: KafkaRecord, reason: string): HandOffItem {
    inv.logger.error('malformed retry copy: sent to the dead-letter topic', {
      partition: topicPartitionKey(record.topic, record.partition), offset: record.offset, reason,
    });
    const h = readHandOffHeaders(record.headers);
    const origin = h.originTopic !== undefined && h.originPartition !== undefined
      ? { topic: h.originTopic, partition: h.originPartition, offset: h.originOffset }
      : { topic: record.topic, partition: record.partition, offset: record.offset };
    return inv.deadLetterItem(record, origin, h.attempt ?? 0, 'malformed', { name: 'MalformedRetryCopy', message: reason });
  }

  /**
   * A copy waits for its due time, then claims its lane's head (check and take in one step: two copies of one
   * head and attempt never run at once); a drained head is the head already (the release that made it so
   * returned it) and is due at once. A copy not due yet is checked first with a read, so a stale one is dropped
   * without waiting.
   */
  async prepare(inv: Invocation<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.source === 'drained') return true;
    if (task.dueAtMs <= inv.now()) return this.#claim(inv, task);
    if (!(await this.#isHead(inv, task))) return false;
    // A loop, not one sleep: Node's timers may fire a millisecond early by the wall clock that due times use,
    // and a copy woken 1 ms early would otherwise go back to its tier for a whole round trip.
    while (inv.now() < task.dueAtMs && inv.now() < inv.stopStartingAt && !inv.stopSignal.aborted) {
      await sleep(Math.min(task.dueAtMs - inv.now(), inv.stopStartingAt - inv.now()), inv.stopSignal);
    }
    if (inv.now() < task.dueAtMs) {
      await this.#writeBack(inv, [task]);
      return false;
    }
    // Waited: the lane may have moved meanwhile (an operator, a duplicate copy run elsewhere).
    return this.#claim(inv, task);
  }

  /** The head check before a copy waits: a stale or duplicated copy does nothing (see `#stale`). */
  async #isHead(inv: Invocation<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.lane === undefined) return true;
    const head = await inv.store.laneHead(task.originRef, task.lane);
    if (head !== undefined && head.offset === task.origin.offset && head.attempt === task.attempt && head.state === 'retrying') return true;
    this.#stale(inv, task, head);
    return false;
  }

  /**
   * The head check before a copy runs, as a claim until the copy's record deadline. A twin copy (the same head
   * and attempt, written twice after a crash) finding the claim alive goes back to its tier, due when the claim
   * ends: by then the head has moved on (the twin is stale) or its claimant died (the twin takes over).
   */
  async #claim(inv: Invocation<RetryTask>, task: RetryTask): Promise<boolean> {
    if (task.lane === undefined) return (await claimUnorderedCopy(inv, task)) || (this.#stale(inv, task, undefined), false);
    const now = inv.now();
    const claim = await inv.store.claimHead(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
      copy: copyIdOf(task),
      nowMs: now,
      untilMs: Math.min(now + inv.options.recordTimeoutMs, inv.abortRunningAt),
    });
    if (claim.status === 'claimed') return true;
    if (claim.status === 'not-head') {
      this.#stale(inv, task, claim.head);
      return false;
    }
    inv.count('twins');
    inv.logger.info('retry copy of a head another copy is running: written back until that run ends', {
      origin: task.origin, attempt: task.attempt, claimedUntil: new Date(claim.untilMs).toISOString(),
    });
    await this.#writeBack(inv, [{ ...task, writeBack: { ...task.writeBack!, dueAtMs: Math.max(task.dueAtMs, claim.untilMs) } }]);
    return false;
  }

  /** A stale or duplicated copy does nothing and is counted; its own offset gets done. */
  #stale(inv: Invocation<RetryTask>, task: RetryTask, head: LaneHead | undefined): void {
    inv.count('stale');
    inv.logger.info('stale retry copy dropped: not its lane head', {
      origin: task.origin, attempt: task.attempt, head: head === undefined ? 'lane free' : { offset: head.offset, attempt: head.attempt, state: head.state },
    });
    inv.markDone(task.ref, task.offset);
  }

  /** Copies due later than the invocation can wait go back to their tier unchanged; their own offsets get done. */
  async #writeBack(inv: Invocation<RetryTask>, tasks: readonly RetryTask[]): Promise<void> {
    const items = tasks.map((task) => task.writeBack!);
    try {
      await inv.write(items);
    } catch (error) {
      for (const task of tasks) inv.handOffFailed(task.ref, [task.offset], error);
      return;
    }
    inv.count('writtenBack', tasks.length);
    for (const task of tasks) inv.markDone(task.ref, task.offset);
  }

  async succeeded(inv: Invocation<RetryTask>, task: RetryTask): Promise<void> {
    inv.count('done');
    if (task.lane !== undefined) await this.#releaseAndDrain(inv, task);
    else await unorderedCopyDone(inv, task);
    if (task.source === 'copy') inv.markDone(task.ref, task.offset);
  }

  /** The head is terminal: release the lane and run its next parked record at once, in order. */
  async #releaseAndDrain(inv: Invocation<RetryTask>, task: RetryTask): Promise<void> {
    let next;
    try {
      next = await inv.store.release(task.originRef, task.lane!, task.origin.offset, 1, inv.now(), inv.leaseUntilMs);
    } catch (error) {
      // Released by someone else meanwhile (an operator): nothing left to do here.
      if (error instanceof NotHeadError) return;
      throw error;
    }
    if (next === undefined) return;
    const record = decodeParked(next.payload);
    const now = inv.now();
    inv.enqueue([{
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

  async failed(inv: Invocation<RetryTask>, task: RetryTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, inv.options.retry.maxAttempts);
    const described = describeError(error);
    inv.logger.warn('retry failed', {
      origin: task.origin, attempt: task.attempt, error: described, decision: decision.action,
      ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    if (decision.action === 'retry') {
      const item = inv.retryAfterFailure(task.record, task.origin, task.attempt, task.firstFailureAtMs, described, decision.delayMs);
      const { dueAtMs } = item;
      const next = { offset: task.origin.offset, attempt: task.attempt + 1 };
      if (task.lane !== undefined) {
        // Advanced before the write, so the new copy always finds its head; the lease and the payload kept
        // in Redis cover a crash before the write lands.
        try {
          await inv.store.advance(task.originRef, task.lane, { offset: task.origin.offset, attempt: task.attempt }, {
            attempt: next.attempt, state: 'retrying', dueAtMs, leaseUntilMs: inv.leaseUntilMs, payload: task.payload ?? parkPayload(task.record),
          });
        } catch (advanceError) {
          if (!(advanceError instanceof NotHeadError || advanceError instanceof StaleAttemptError)) throw advanceError;
          // Settled elsewhere meanwhile (a duplicate copy ran, an operator released the lane): nothing to hand off.
          inv.count('stale');
          if (task.source === 'copy') inv.markDone(task.ref, task.offset);
          return;
        }
      }
      const [outcome] = await inv.write([item]);
      if (outcome?.status === 'refused') {
        if (task.lane !== undefined) await this.#deadLettered(inv, task, next, outcome);
        inv.count('deadLettered');
      } else {
        if (task.lane !== undefined) {
          await inv.store.advance(task.originRef, task.lane, next, { attempt: next.attempt, state: 'retrying', dueAtMs, leaseUntilMs: 0 }).catch((e: unknown) => {
            // Moved on already (the new copy ran elsewhere): the lease is gone with the old state.
            if (!(e instanceof NotHeadError || e instanceof StaleAttemptError)) throw e;
          });
        }
        inv.count('retried');
      }
    } else {
      const item = inv.deadLetterItem(task.record, task.origin, task.attempt, decision.reason, described);
      await inv.write([item]);
      inv.count('deadLettered');
      if (task.lane !== undefined) await this.#deadLettered(inv, task, { offset: task.origin.offset, attempt: task.attempt }, { reason: decision.reason });
    }
    if (task.source === 'copy') inv.markDone(task.ref, task.offset);
  }

  /** The head is in the dead-letter topic: `hold` keeps the lane blocked, `release` moves on and drains. */
  async #deadLettered(inv: Invocation<RetryTask>, task: RetryTask, head: { offset: number; attempt: number }, why: { reason: string }): Promise<void> {
    if (inv.options.deadLetter.policy === 'hold') {
      await applyDeadLetterPolicy(inv, task.originRef, task.lane!, head, why);
      return;
    }
    await this.#releaseAndDrain(inv, task);
  }

  /** The deadline came: copies not started go back to their tier; drained heads go to the first tier, due now. */
  async deferUnstarted(inv: Invocation<RetryTask>, tasks: RetryTask[]): Promise<void> {
    const copies = tasks.filter((task) => task.source === 'copy');
    const drained = tasks.filter((task) => task.source === 'drained');
    await Promise.all([
      this.#writeBack(inv, copies),
      ...drained.map(async (task) => {
        try {
          await handOffNewHead(inv, task.originRef, task.lane!, { offset: task.origin.offset, payload: task.payload! }, task.attempt);
          inv.count('deferred');
        } catch (error) {
          // Its lease stays: the committer writes its copy once the lease expires.
          inv.logger.error('cannot hand a drained lane head off; the committer re-drives it when its lease expires', {
            origin: task.origin, error: describeError(error),
          });
        }
      }),
    ]);
  }

  /** A fault of ours: a copy goes back to the event source; a drained head keeps its lease for the re-drive. */
  faulted(inv: Invocation<RetryTask>, task: RetryTask, error: unknown): void {
    if (task.source === 'copy') {
      inv.handOffFailed(task.ref, [task.offset], error);
      return;
    }
    inv.logger.error('a drained lane head failed to settle; the committer re-drives it when its lease expires', {
      origin: task.origin, error: describeError(error),
    });
  }
}

/** A retry copy seen as its original: origin coordinates, no framework headers (what `keyOf` saw first). */
function originalOf(copy: KafkaRecord, origin: RecordCoordinates): KafkaRecord {
  return {
    ...copy,
    topic: origin.topic,
    partition: origin.partition,
    offset: origin.offset,
    headers: copy.headers.filter((header) => !header.name.startsWith(HEADER_PREFIX)),
  };
}
