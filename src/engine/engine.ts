import type { Logger } from '@aws-lambda-powertools/logger';
import type { PartitionRef } from '../completion/types';
import { LanesError } from '../errors';
import { jsonText } from '../describe';
import {
  batchItemFailures,
  isDecodeFailure,
  topicPartitionKey,
  type Delivered,
  type DecodeFailure,
  type KafkaBatchResponse,
  type KafkaRecord,
  type PartitionBatch,
  type RecordCoordinates,
} from '../event';
import type { HandOffItem, HandOffOutcome } from '../handoff/types';
import { backoffDelay } from '../options/backoff';
import { readRecordParts, type RecordParts } from '../options/deserialize';
import type { LanesOptions } from '../options/lanes-options';
import { deadLetterTopic, retryTopic } from '../options/names';
import { tierFor } from '../options/retry-tiers';
import { describeError, type DeadLetterReason } from './outcome';
import { LaneScheduler, type Task } from './scheduler';
import { METRIC, MetricUnit, type Telemetry } from './telemetry';
import { deadlineSignal } from '../deadline';
import { RecordDeadlines, type RecordDeadline } from './record-deadlines';
import { SYSTEM_CLOCK, type Clock, type CompletionPort, type HandOffSink } from './ports';
import type { LanesContext, LanesRecord, RecordHandler } from './types';
import { effectsTtlMs, type EffectsPort, type OutputRecord, type StepsRef } from './effects';
import { firstOriginOf, idempotencyKeyOf } from './idempotency-key';
import { RecordEffects } from './steps';
import { isRepeatedOutput, sendOutputs } from './outputs';

/** The part of the Lambda context the engine needs. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  readonly awsRequestId?: string;
}

/** One record to run: where its done bit goes, what the handler sees, and its attempt. */
export interface EngineTask extends Task {
  /** The partition of the delivered record (a source partition, or a retry topic's for a retry copy). */
  readonly ref: PartitionRef;
  /** What the handler is given. */
  readonly record: KafkaRecord;
  /** The record's origin (DESIGN.md section 2): a retry copy's comes from its headers. */
  readonly origin: RecordCoordinates;
  readonly attempt: number;
  /** Set when the record cannot run at all (its `keyOf` threw): it fails with this at once. */
  readonly preset?: unknown;
}

/**
 * What differs between the processor and the retry function: how a delivered batch becomes tasks, what
 * happens before a task runs, and after it succeeded or failed. Everything else (scheduling, timeouts,
 * hand-off, flushing, the deadline) is the engine's.
 */
export interface Admission<T extends EngineTask> {
  /** Admits one partition's batch: the tasks to run, and hand-offs found at admission (awaited after the runs). */
  admit(invocation: Invocation<T>, batch: PartitionBatch): Promise<{ tasks: T[]; handOffs: Promise<unknown> }>;
  /** Runs before the handler; `false`: the task settled without running (a stale copy, one written back). */
  prepare?(invocation: Invocation<T>, task: T): Promise<boolean>;
  /** A promise only when there is something to wait for (the processor's success is synchronous). */
  succeeded(invocation: Invocation<T>, task: T): Promise<void> | void;
  failed(invocation: Invocation<T>, task: T, error: unknown): Promise<void>;
  /** The deadline came: hands the tasks not started off, attempt unchanged. */
  deferUnstarted(invocation: Invocation<T>, tasks: T[]): Promise<void>;
  /**
   * A fault of ours (not the handler's) while settling a task. Default: the record and the records waiting
   * behind it in its lane go back to the event source, never on out of order.
   */
  faulted?(invocation: Invocation<T>, task: T, error: unknown): void;
}

export interface EngineParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  readonly store: CompletionPort;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
  /** Step results, output dedupe and unordered copy claims; without it `ctx.step` and `dedupeOutputs` are refused. */
  readonly effects?: EffectsPort;
}

/** Raised when records could not be handed off and the event source has no partial batch response. */
export class BatchNotHandedOffError extends LanesError {}

/** The invocation is about to reach its deadline: running records are aborted and count as failed. */
export class DeadlineError extends LanesError {
  constructor() {
    super('the invocation deadline is near: record aborted', { retriable: true });
  }
}

/** The record ran longer than `recordTimeoutMs`. */
export class RecordTimeoutError extends LanesError {
  constructor(message: string) {
    super(message, { retriable: true });
  }
}

/**
 * A partition's pending done bits are flushed at once when this many wait, not only every `flushIntervalMs`:
 * the frontier moves sooner, and the call at the end of an invocation stays small instead of carrying a whole
 * batch's bits while the invocation waits for it.
 */
export const FLUSH_AT = 4_096;

/** How long past its invocation's end a lease on a lane head lasts: the committer re-drives it after that. */
export const LEASE_SLACK_MS = 30_000;

/**
 * The engine of DESIGN.md section 4, shared by the processor and the retry function: one instance per
 * function (module scope), `run` per invocation with the admission that fits the event.
 *
 * @example
 * const engine = new Engine({ options, handler, store, telemetry });
 * const response = await engine.run(new ProcessorAdmission(), decoded.partitions, sink, context);
 */
export class Engine {
  readonly parts: EngineParts;
  readonly clock: Clock;

  constructor(parts: EngineParts) {
    this.parts = parts;
    this.clock = parts.clock ?? SYSTEM_CLOCK;
  }

  run<T extends EngineTask>(
    admission: Admission<T>,
    partitions: readonly PartitionBatch[],
    sink: HandOffSink,
    context: InvocationContext,
  ): Promise<KafkaBatchResponse> {
    return new Invocation(this, admission, sink, context).run(partitions);
  }
}

type CounterName =
  | 'recordsIn'
  | 'done'
  | 'duplicates'
  | 'parked'
  | 'retried'
  | 'deadLettered'
  | 'deferred'
  | 'refused'
  | 'refusedByBroker'
  | 'stale'
  | 'twins'
  | 'outputs'
  | 'writtenBack';

const COUNTER_METRIC: Record<CounterName, string> = {
  recordsIn: METRIC.recordsIn,
  done: METRIC.done,
  duplicates: METRIC.duplicates,
  parked: METRIC.parked,
  retried: METRIC.retried,
  deadLettered: METRIC.deadLettered,
  deferred: METRIC.deferred,
  refused: METRIC.refused,
  refusedByBroker: METRIC.refusedByBroker,
  stale: METRIC.stale,
  twins: METRIC.twins,
  outputs: METRIC.outputs,
  writtenBack: METRIC.writtenBack,
};

const noop = (): void => undefined;

/**
 * The state of one invocation, and the capabilities an admission uses: the completion store bounded by the
 * invocation's deadline, hand-off writes, done bits, the scheduler and the counters.
 */
export class Invocation<T extends EngineTask> {
  readonly options: LanesOptions;
  readonly clock: Clock;
  readonly startedAt: number;
  /** No record starts after this (epoch ms). */
  readonly stopStartingAt: number;
  /** Running records are aborted at this point, leaving half the margin to hand them off. */
  readonly abortRunningAt: number;
  /** A lease taken in this invocation lasts until then: past it, the invocation is surely gone. */
  readonly leaseUntilMs: number;
  /** The completion store, its calls given up when the invocation is about to be frozen. */
  readonly store: CompletionPort;
  /** Aborts when no record may start any more (waits for due times end there). */
  readonly stopSignal: AbortSignal;
  /** Step results, output dedupe and unordered copy claims, bounded like `store`. */
  readonly effects: EffectsPort | undefined;
  /** How long step results and claims are kept (`effectsTtlMs`). */
  readonly effectsTtlMs: number;
  readonly #engine: Engine;
  readonly #admission: Admission<T>;
  /** Step results of records found terminal, deleted once their done bits are flushed. */
  #forget: StepsRef[] = [];
  readonly #sink: HandOffSink;
  readonly #scheduler: LaneScheduler<T>;
  readonly #stop = new AbortController();
  /** Aborts hand-off writes and Redis calls just before Lambda would freeze the invocation. */
  readonly #handOffSignal: AbortSignal;
  /** Handler run times in ms, summarised into the latency metric once per invocation. */
  readonly #latencies: number[] = [];
  readonly #pendingDone = new Map<string, { ref: PartitionRef; offsets: number[] }>();
  #lastDone: { ref: PartitionRef; offsets: number[] } | undefined = undefined;
  readonly #notHandedOff: RecordCoordinates[] = [];
  /** Records that could be neither handed off nor named in a partial batch response (no offset). */
  #unreportable = 0;
  readonly #counters = new Map<CounterName, number>();
  readonly #frontiers: Array<{ key: string; frontier: number; highest: number }> = [];
  readonly #deadlines: RecordDeadlines;
  /** Records started and not settled. */
  #running = 0;
  /** Admissions not finished: more tasks may still come. */
  #admitting = 0;
  #filling = false;
  /** Resolves `#idle` once nothing runs, nothing is ready and no admission is pending. */
  #settle: () => void = noop;
  #flushing: Promise<void> = Promise.resolve();
  /** Each partition's admission, settled once its whole batch is admitted. */
  readonly #admissions = new Map<string, Promise<unknown>>();

  constructor(engine: Engine, admission: Admission<T>, sink: HandOffSink, context: InvocationContext) {
    this.#engine = engine;
    this.#admission = admission;
    this.options = engine.parts.options;
    this.clock = engine.clock;
    this.#sink = sink;
    this.startedAt = this.clock.now();
    const remaining = context.getRemainingTimeInMillis();
    const margin = this.options.deadlineMarginMs;
    this.stopStartingAt = this.startedAt + remaining - margin;
    this.abortRunningAt = this.startedAt + remaining - margin / 2;
    this.leaseUntilMs = this.startedAt + remaining + LEASE_SLACK_MS;
    this.#handOffSignal = deadlineSignal(Math.max(1, remaining - Math.min(250, margin / 4)));
    this.store = engine.parts.store.withLimits({ signal: this.#handOffSignal });
    const effects = engine.parts.effects;
    this.effects = effects?.withLimits === undefined ? effects : effects.withLimits({ signal: this.#handOffSignal });
    this.effectsTtlMs = effectsTtlMs(this.options);
    this.stopSignal = this.#stop.signal;
    this.#scheduler = new LaneScheduler(this.options.concurrency);
    this.#deadlines = new RecordDeadlines(this.options.recordTimeoutMs, () => new RecordTimeoutError(`record timed out after ${this.options.recordTimeoutMs} ms`));
  }

  get logger(): Logger {
    return this.#engine.parts.telemetry.logger;
  }

  now(): number {
    return this.clock.now();
  }

  get stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  async run(partitions: readonly PartitionBatch[]): Promise<KafkaBatchResponse> {
    const flushTimer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    const stopTimer = setTimeout(() => this.#stopStarting(), Math.max(0, this.stopStartingAt - this.now()));
    const abortTimer = setTimeout(() => this.#abortRunning(), Math.max(0, this.abortRunningAt - this.now()));
    try {
      if (this.now() >= this.stopStartingAt) this.#stopStarting();
      // Records start as soon as their part of a batch is admitted (an admission may enqueue in chunks),
      // while the rest is still being admitted.
      const idle = new Promise<void>((resolve) => {
        this.#settle = resolve;
      });
      this.#admitting = partitions.length;
      const admitted = Promise.all(partitions.map((batch) => {
        this.count('recordsIn', batch.records.length + batch.failures.length);
        return this.#admit(batch);
      }));
      this.#fill();
      await idle;
      // Hand-offs found at admission run beside the records, so a slow one holds up no other key (G6).
      await admitted;
      // Tasks added while the last ones finished (a lane drained inline) still need to run.
      await this.#drain();
      if (this.stopped) {
        const unstarted = this.#scheduler.drainAll();
        if (unstarted.length > 0) await this.#admission.deferUnstarted(this, unstarted);
      }
    } finally {
      clearInterval(flushTimer);
      clearTimeout(stopTimer);
      clearTimeout(abortTimer);
      this.#deadlines.close();
    }
    await this.flush();
    this.#report();
    const failures = this.#notHandedOff;
    if (this.#unreportable > 0) {
      // A partial batch response cannot name a record without an offset: only a failed invocation makes
      // the event source deliver the batch again.
      throw new BatchNotHandedOffError(
        `${this.#unreportable} malformed record(s) without a readable offset could not be dead-lettered; failing the invocation so the event source redelivers the batch`,
        { retriable: true },
      );
    }
    if (failures.length > 0 && !this.options.partialBatchResponse) {
      throw new BatchNotHandedOffError(
        `${failures.length} record(s) could not be handed off (first: ${topicPartitionKey(failures[0]!.topic, failures[0]!.partition)}@${failures[0]!.offset}); failing the invocation so the event source redelivers the batch`,
        { retriable: true },
      );
    }
    return batchItemFailures(failures);
  }

  // ---- scheduling --------------------------------------------------------------------------------

  /** Schedules more tasks (a lane's next head, drained inline, or an admitted chunk); they start as soon as their lane is free. */
  enqueue(tasks: readonly T[]): void {
    this.#scheduler.add(tasks);
    this.#fill();
  }

  /** Removes and returns the not-started tasks of a lane. */
  drainLane(partitionKey: string, lane: string): T[] {
    return this.#scheduler.drainLane(partitionKey, lane);
  }

  /** Admits one partition's batch (an admission may enqueue early chunks itself) and waits for its hand-offs. */
  async #admit(batch: PartitionBatch): Promise<void> {
    let handOffs: Promise<unknown>;
    try {
      const admission = this.#admission.admit(this, batch);
      this.#admissions.set(topicPartitionKey(batch.topic, batch.partition), admission);
      const admitted = await admission;
      this.#scheduler.add(admitted.tasks);
      handOffs = admitted.handOffs;
    } finally {
      this.#admitting -= 1;
      this.#fill();
    }
    await handOffs;
  }

  /**
   * Settles once the partition's whole batch is admitted. A lane's head that fails waits for it before it
   * parks the lane's followers: records of later chunks queue behind the head until then.
   */
  admitted(partitionKey: string): Promise<void> {
    const admission = this.#admissions.get(partitionKey);
    return admission === undefined ? Promise.resolve() : admission.then(noop, noop);
  }

  /** Waits until every task enqueued so far has settled. */
  #drain(): Promise<void> {
    if (this.#running === 0 && (this.stopped || this.#scheduler.pendingCount === 0)) return Promise.resolve();
    const idle = new Promise<void>((resolve) => {
      this.#settle = resolve;
    });
    this.#fill();
    return idle;
  }

  /**
   * Starts ready records, at most `concurrency` at once; called whenever that may change (tasks added, a
   * record settled, an admission ended). Resolves the idle promise once nothing is left to wait for.
   */
  #fill(): void {
    if (this.#filling) return;
    this.#filling = true;
    try {
      while (!this.stopped) {
        const task = this.#scheduler.next();
        if (task === undefined) break;
        this.#running += 1;
        void this.#runGuarded(task);
      }
    } finally {
      this.#filling = false;
    }
    if (this.#running === 0 && this.#admitting === 0 && (this.stopped || this.#scheduler.pendingCount === 0)) {
      const settle = this.#settle;
      this.#settle = noop;
      settle();
    }
  }

  /**
   * Runs one task to its end: the admission's preparation, the handler within its deadline, then success or
   * failure. A fault of ours (not the handler's: those are caught around it) is settled here too. One async
   * function per record, no closures: this is the run path of every record.
   */
  async #runGuarded(task: T): Promise<void> {
    try {
      if (this.#admission.prepare !== undefined && !(await this.#admission.prepare(this, task))) return;
      if (this.options.dedupeOutputs && (await isRepeatedOutput(this, task))) {
        this.count('duplicates');
        const succeeded = this.#admission.succeeded(this, task);
        if (succeeded !== undefined) await succeeded;
        return;
      }
      const deadline = this.#deadlines.start();
      const started = performance.now();
      let failed = false;
      let failure: unknown;
      let ctx: RecordContext | undefined;
      try {
        if (task.preset !== undefined) throw task.preset;
        ctx = new RecordContext(task, this, Math.min(this.now() + this.options.recordTimeoutMs, this.abortRunningAt), deadline);
        // A promise only when a schema validates asynchronously; bounded by the record's deadline like the handler.
        let parts = readRecordParts(this.options, task.record);
        if (parts instanceof Promise) parts = await deadline.race(parts);
        const run = this.#engine.parts.handler(this.view(task, parts), ctx);
        // A handler that ignores its signal cannot hold the invocation past the record's deadline: the record
        // counts as failed and the handler goes on detached (at-least-once allows it).
        if (isPromiseLike(run)) await deadline.race(run);
        else if (deadline.expired) throw deadline.reason;
      } catch (error) {
        failed = true;
        failure = error;
      } finally {
        deadline.finish();
        this.#latencies.push(performance.now() - started);
      }
      const effects = ctx?.effects;
      if (!failed && effects !== undefined) {
        try {
          // Outputs are acknowledged before the record is done (G3 extended); a send that fails fails the record.
          await sendOutputs(this, this.#sink, effects.seal(), this.#handOffSignal);
        } catch (error) {
          failed = true;
          failure = error;
        }
      }
      if (failed) {
        await this.#admission.failed(this, task, failure);
      } else {
        const succeeded = this.#admission.succeeded(this, task);
        if (succeeded !== undefined) await succeeded;
        if (effects?.usedSteps === true) this.#forget.push(effects.steps);
      }
    } catch (error) {
      if (this.#admission.faulted !== undefined) {
        this.#admission.faulted(this, task, error);
      } else {
        await this.admitted(task.partitionKey);
        const waiting = task.lane === undefined ? [] : this.#scheduler.drainLane(task.partitionKey, task.lane);
        this.handOffFailed(task.ref, [task.offset, ...waiting.map((w) => w.offset)], error);
      }
    } finally {
      this.#running -= 1;
      this.#scheduler.finish(task);
      this.#fill();
    }
  }

  #stopStarting(): void {
    if (this.stopped) return;
    this.#stop.abort();
    this.#fill();
  }

  #abortRunning(): void {
    this.#deadlines.expireAll(new DeadlineError());
  }

  /** What the handler sees of a task's record. */
  view(task: T, parts: RecordParts): LanesRecord {
    const { record } = task;
    return {
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      timestamp: record.timestamp,
      timestampType: record.timestampType,
      key: parts.key,
      value: parts.value,
      rawKey: record.key,
      rawValue: record.value,
      headers: record.headers,
      origin: task.origin,
    };
  }

  // ---- hand-off ----------------------------------------------------------------------------------

  /**
   * Writes hand-off copies, bounded by the invocation's deadline; one outcome per item. A copy the broker
   * refused for good was dead-lettered stripped by the writer: it is logged and counted here.
   */
  async write(items: readonly HandOffItem[]): Promise<readonly HandOffOutcome[]> {
    if (items.length === 0) return [];
    // A signal of its own per write: hundreds of writes never pile listeners on the invocation's signal.
    const outcomes = await this.#sink.write(items, { signal: deadlineSignal(undefined, this.#handOffSignal) });
    outcomes.forEach((outcome, i) => {
      if (outcome.status !== 'refused') return;
      const item = items[i]!;
      this.count('refusedByBroker');
      this.logger.error('the broker refused a hand-off copy for good: a dead-letter copy without its value was written instead', {
        topic: item.topic, origin: item.origin, attempt: item.attempt, reason: outcome.reason, error: outcome.error,
      });
    });
    return outcomes;
  }

  /** Writes hand-off copies, then marks their records done; reports them as not handed off on failure. */
  async writeAndMarkDone(ref: PartitionRef, items: readonly HandOffItem[], count: () => void): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.write(items);
    } catch (error) {
      this.handOffFailed(ref, items.map((item) => item.record.offset), error);
      return;
    }
    count();
    for (const item of items) this.markDone(ref, item.record.offset);
  }

  /** A retry copy of `record` for `attempt`, due at `dueAtMs`, in the tier that fits its delay. */
  retryItem(
    record: KafkaRecord,
    origin: RecordCoordinates,
    attempt: number,
    dueAtMs: number,
    firstFailureAtMs: number,
    error: { name: string; message: string } | undefined,
    deferred: boolean,
    now = this.now(),
  ): HandOffItem {
    const { group, retry } = this.options;
    return {
      record,
      origin,
      kind: 'retry',
      topic: retryTopic(group, tierFor(Math.max(0, dueAtMs - now), retry.tiers)),
      attempt,
      dueAtMs,
      firstFailureAtMs,
      ...(error === undefined ? {} : { error }),
      deferred,
    };
  }

  /**
   * The retry copy after attempt `attempt` failed: attempt + 1, due after the error's own delay or the backoff
   * policy's, in the tier of that delay (one reading of the clock for both, so a delay equal to a tier's
   * always lands in that tier).
   */
  retryAfterFailure(
    record: KafkaRecord,
    origin: RecordCoordinates,
    attempt: number,
    firstFailureAtMs: number,
    error: { name: string; message: string },
    delayMs: number | undefined,
  ): HandOffItem {
    const now = this.now();
    const dueAtMs = now + (delayMs ?? backoffDelay(this.options.retry.backoff, attempt));
    return this.retryItem(record, origin, attempt + 1, dueAtMs, firstFailureAtMs, error, false, now);
  }

  deadLetterItem(
    record: KafkaRecord,
    origin: RecordCoordinates | { topic: string; partition: number; offset: number | undefined },
    attempt: number,
    reason: DeadLetterReason | string,
    error: { name: string; message: string },
  ): HandOffItem {
    const now = this.now();
    return {
      record,
      origin,
      kind: 'dead-letter',
      topic: deadLetterTopic(this.options.group),
      attempt,
      dueAtMs: now,
      firstFailureAtMs: now,
      error,
      reason,
    };
  }

  /**
   * Dead-letters records the event decoder could not read, with the reason, as one write. The copy's value
   * is the record's JSON as received. Those with a known offset are marked done once written.
   */
  async deadLetterMalformed(ref: PartitionRef, failures: readonly DecodeFailure[]): Promise<void> {
    if (failures.length === 0) return;
    const now = this.now();
    const items = failures.map((failure): HandOffItem => {
      this.logger.error('malformed record: sent to the dead-letter topic', {
        partition: topicPartitionKey(failure.topic, failure.partition), offset: failure.offset, reason: failure.message,
      });
      return this.#malformedItem(failure, now, 'malformed', failure.message);
    });
    try {
      await this.write(items);
    } catch (error) {
      const placed = failures.flatMap((failure) => (failure.offset === undefined ? [] : [failure.offset]));
      this.handOffFailed(ref, placed, error);
      if (placed.length < failures.length) {
        this.#unreportable += failures.length - placed.length;
        this.logger.error('cannot dead-letter malformed records without an offset: the invocation will fail', {
          count: failures.length - placed.length, error: describeError(error),
        });
      }
      return;
    }
    this.count('deadLettered', failures.length);
    for (const failure of failures) if (failure.offset !== undefined) this.markDone(ref, failure.offset);
  }

  /**
   * Dead-letters every version of offsets delivered more than once with differing contents, as one write;
   * each offset is marked done only once all its versions are acknowledged (a crash before loses none).
   */
  async deadLetterConflicts(ref: PartitionRef, conflicts: ReadonlyArray<{ offset: number; versions: readonly Delivered[] }>): Promise<void> {
    if (conflicts.length === 0) return;
    const now = this.now();
    const items = conflicts.flatMap(({ offset, versions }) => {
      const message = `offset ${offset} of ${topicPartitionKey(ref.topic, ref.partition)} was delivered ${versions.length} times with differing contents: every version is dead-lettered`;
      this.logger.error('records share an offset: all sent to the dead-letter topic', { partition: topicPartitionKey(ref.topic, ref.partition), offset, versions: versions.length });
      return versions.map((version) => (isDecodeFailure(version)
        ? this.#malformedItem(version, now, 'duplicate-offset', `${message}; this one is malformed: ${version.message}`)
        : this.deadLetterItem(version, { topic: version.topic, partition: version.partition, offset: version.offset }, 0, 'duplicate-offset', { name: 'DuplicateOffset', message })));
    });
    try {
      await this.write(items);
    } catch (error) {
      this.handOffFailed(ref, conflicts.map(({ offset }) => offset), error);
      return;
    }
    this.count('deadLettered', items.length);
    for (const { offset } of conflicts) this.markDone(ref, offset);
  }

  /** The dead-letter copy of a record the decoder could not read: its value is the record's JSON as received. */
  #malformedItem(failure: DecodeFailure, now: number, reason: DeadLetterReason, message: string): HandOffItem {
    const record: KafkaRecord = {
      topic: failure.topic,
      partition: failure.partition,
      offset: failure.offset ?? 0,
      timestamp: now,
      timestampType: 'LOG_APPEND_TIME',
      key: null,
      // Any depth: a record nested past the stack's limit is still written in full.
      value: Buffer.from(jsonText(failure.raw), 'utf8'),
      headers: [],
      raw: {} as KafkaRecord['raw'],
    };
    return this.deadLetterItem(record, { topic: failure.topic, partition: failure.partition, offset: failure.offset }, 0, reason, { name: 'DecodeFailure', message });
  }

  /**
   * Each hand-off reports its own failures; this only keeps a fault of ours from ending the process with an
   * unhandled rejection: admission's hand-offs are awaited only after the runs, long after they may fail.
   */
  guard(work: Promise<unknown>, partitionKey: string): Promise<void> {
    return work.then(noop, (error: unknown) => {
      this.logger.error('unexpected fault handing off at admission', { partition: partitionKey, error: describeError(error) });
    });
  }

  // ---- done bits and reporting -------------------------------------------------------------------

  markDone(ref: PartitionRef, offset: number): void {
    // The same ref object comes again and again (a partition's tasks share it): skip the key then.
    if (ref === this.#lastDone?.ref) {
      if (this.#lastDone.offsets.push(offset) === FLUSH_AT) void this.flush();
      return;
    }
    const key = topicPartitionKey(ref.topic, ref.partition);
    let pending = this.#pendingDone.get(key);
    if (pending === undefined) {
      pending = { ref, offsets: [] };
      this.#pendingDone.set(key, pending);
    }
    this.#lastDone = pending.ref === ref ? pending : undefined;
    if (pending.offsets.push(offset) === FLUSH_AT) void this.flush();
  }

  /** Sends pending done bits, one script call per partition; flushes never overlap. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const batches = [...this.#pendingDone.values()].filter((p) => p.offsets.length > 0).map((p) => ({ ref: p.ref, offsets: p.offsets.splice(0) }));
      const forget = this.#forget.splice(0);
      let allMarked = true;
      await Promise.all(batches.map(async ({ ref, offsets }) => {
        try {
          await this.store.markDone(ref, offsets);
        } catch (error) {
          allMarked = false;
          // Finished but not recorded: report them, so the event source redelivers and they run again.
          this.handOffFailed(ref, offsets, error);
        }
      }));
      // Step results go only once their records' done bits are stored: a redelivery before that still finds them.
      if (forget.length > 0 && allMarked && this.effects !== undefined) {
        await this.effects.forgetSteps(forget).catch((error: unknown) => {
          this.logger.warn('step results of terminal records not deleted: they expire on their own', { count: forget.length, error: describeError(error) });
        });
      }
    });
    return this.#flushing;
  }

  handOffFailed(ref: PartitionRef, offsets: readonly number[], error: unknown): void {
    this.logger.error('records could not be handed off; reported for redelivery', {
      partition: topicPartitionKey(ref.topic, ref.partition), offsets: offsets.slice(0, 20), count: offsets.length, error: describeError(error),
    });
    for (const offset of offsets) this.notHanded(ref, offset);
  }

  notHanded(ref: PartitionRef, offset: number): void {
    this.#notHandedOff.push({ topic: ref.topic, partition: ref.partition, offset });
  }

  count(name: CounterName, by = 1): void {
    this.#counters.set(name, (this.#counters.get(name) ?? 0) + by);
  }

  /** Where a partition stands after its admission, for the frontier metrics. */
  window(ref: PartitionRef, window: { frontier: number; highest: number }): void {
    const key = topicPartitionKey(ref.topic, ref.partition);
    // Once per partition: a batch admitted in chunks reports where its last chunk left the partition.
    const known = this.#frontiers.find((f) => f.key === key);
    if (known === undefined) this.#frontiers.push({ key, frontier: window.frontier, highest: window.highest });
    else Object.assign(known, { frontier: window.frontier, highest: window.highest });
  }

  #report(): void {
    const { metrics } = this.#engine.parts.telemetry;
    const c: Record<string, number> = {};
    for (const name of Object.keys(COUNTER_METRIC) as CounterName[]) {
      const value = this.#counters.get(name) ?? 0;
      // The counters every batch line has always carried; the others only when they happened.
      if (value > 0 || !OPTIONAL_COUNTERS.has(name)) {
        c[name] = value;
        metrics.addMetric(COUNTER_METRIC[name], MetricUnit.Count, value);
      }
    }
    c.notHandedOff = this.#notHandedOff.length;
    metrics.addMetric(METRIC.notHandedOff, MetricUnit.Count, c.notHandedOff);
    const durationMs = this.now() - this.startedAt;
    metrics.addMetric(METRIC.batchDuration, MetricUnit.Milliseconds, durationMs);
    // EMF carries at most 100 values per metric and record: send evenly spaced quantiles of the run times,
    // so CloudWatch percentiles stay close without one metric write per record. 99, not 100: Powertools
    // flushes a metric on its 100th value, which would leave the publish below empty (and warning).
    for (const value of quantiles(this.#latencies, 99)) metrics.addMetric(METRIC.handlerLatency, MetricUnit.Milliseconds, value);
    for (const f of this.#frontiers) {
      const single = metrics.singleMetric();
      single.addDimension('partition', f.key);
      single.addMetric(METRIC.frontier, MetricUnit.Count, f.frontier);
      single.addMetric(METRIC.highestSeen, MetricUnit.Count, f.highest);
    }
    metrics.publishStoredMetrics();
    this.logger.info('batch processed', { ...c, durationMs, partitions: this.#frontiers.length });
  }
}

const OPTIONAL_COUNTERS: ReadonlySet<CounterName> = new Set(['refusedByBroker', 'stale', 'twins', 'writtenBack', 'outputs']);

/** At most `count` values, evenly spaced through the sorted values (all of them when there are fewer). */
export function quantiles(values: readonly number[], count: number): number[] {
  if (values.length <= count) return [...values];
  const sorted = [...values].sort((a, b) => a - b);
  return Array.from({ length: count }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (count - 1))]!);
}

/**
 * What a handler gets for one record; its `signal`, its idempotency key and its steps' state are made only if the
 * handler uses them.
 */
class RecordContext implements LanesContext {
  readonly attempt: number;
  readonly deadline: number;
  readonly #deadline: RecordDeadline;
  readonly #task: EngineTask;
  readonly #invocation: Invocation<EngineTask>;
  effects: RecordEffects | undefined = undefined;

  constructor(task: EngineTask, invocation: Invocation<EngineTask>, deadline: number, recordDeadline: RecordDeadline) {
    this.attempt = task.attempt;
    this.deadline = deadline;
    this.#deadline = recordDeadline;
    this.#task = task;
    this.#invocation = invocation;
  }

  get logger(): Logger {
    return this.#invocation.logger;
  }

  get signal(): AbortSignal {
    return this.#deadline.signal;
  }

  get idempotencyKey(): string {
    return idempotencyKeyOf(this.#invocation.options.group, firstOriginOf(this.#task.record.headers, this.#task.origin));
  }

  step<R>(name: string, fn: () => R | Promise<R>): Promise<R> {
    return this.#effects().step(name, fn);
  }

  send(topic: string, record: OutputRecord): void {
    this.#effects().send(topic, record);
  }

  #effects(): RecordEffects {
    if (this.effects !== undefined) return this.effects;
    const inv = this.#invocation;
    const port = inv.effects;
    if (port === undefined) throw new LanesError('ctx.step and ctx.send need the effects store, which this engine was made without');
    const origin = firstOriginOf(this.#task.record.headers, this.#task.origin);
    const at = { ref: { group: inv.options.group, topic: origin.topic, partition: origin.partition }, offset: origin.offset };
    this.effects = new RecordEffects(port, at, inv.options.group, inv.options, inv.effectsTtlMs, () => this.#deadline.signal);
    return this.effects;
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
