import { DeadlineError, RecordTimeoutError } from '../errors';
import { awaitReplicas } from './replicas';
import { batchSize, topicPartitionKey, type KafkaBatchResponse, type PartitionBatch, type RecordCoordinates } from '../event';
import { copiesFor } from '../handoff/copies';
import { readRecordParts } from '../options/deserialize';
import { SchemaRegistryUnavailableError } from '../registry/errors';
import type { LanesOptions } from '../options/lanes-options';
import { deadlineSignal } from '../deadline';
import { invocationDoneBits, type DoneBits } from './done-bits';
import { batchResponse, writeHandOffs } from './invocation-edges';
import { describeError } from '../lanes/outcome';
import { SYSTEM_CLOCK, type Clock, type CompletionPort, type EffectsPort, type HandOffSink, type PartitionRef } from '../ports';
import { RecordContext, isPromiseLike, recordView } from './record-context';
import { RecordDeadlines, type RecordDeadline } from './record-deadlines';
import { RunReport } from './run-report';
import { INLINE_WAIT, moreWaiting, type CopyWait, type EngineTask, type InvocationContext, type InvocationOutcome, type PathScope, type RecordPath, type Waiting } from './run-scope';
import { LaneScheduler } from './scheduler';
import type { Telemetry } from '../telemetry';
import type { RecordHandler } from './types';
import { effectsTtlMs } from '../lanes/effects';
import { isRepeatedOutput, OutputBatches } from './outputs';

export type { EngineTask, InvocationContext, InvocationOutcome, RecordPath, RunScope } from './run-scope';

export interface EngineParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  readonly store: CompletionPort;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
  /** Step results and output dedupe; without it `ctx.step` and `dedupeOutputs` are refused. */
  readonly effects?: EffectsPort;
}

/** How long past its invocation's end a lease on a lane head lasts: the committer re-drives it after that. */
export const LEASE_SLACK_MS = 30_000;

/**
 * The engine shared by the source records and the retry copies: one instance per function (module scope),
 * `run` per invocation with the record path that fits the event; `round` per round of a suspend loop (`CopyWait`).
 *
 * @example
 * const engine = new Engine({ options, handler, store, telemetry });
 * const response = await engine.run(new SourcePath(), decoded.partitions, sink, context);
 */
export class Engine {
  readonly parts: EngineParts;
  readonly clock: Clock;

  constructor(parts: EngineParts) {
    this.parts = parts;
    this.clock = parts.clock ?? SYSTEM_CLOCK;
  }

  async run<T extends EngineTask>(path: RecordPath<T>, partitions: readonly PartitionBatch[], sink: HandOffSink, context: InvocationContext): Promise<KafkaBatchResponse> {
    return (await new Invocation(this.parts, this.clock, path, sink, context, INLINE_WAIT).run(partitions)).response;
  }

  round<T extends EngineTask>(path: RecordPath<T>, partitions: readonly PartitionBatch[], sink: HandOffSink, context: InvocationContext, untilMs: number): Promise<InvocationOutcome> {
    return new Invocation(this.parts, this.clock, path, sink, context, { kind: 'suspend', untilMs }).run(partitions);
  }
}

const noop = (): void => undefined;

/** One invocation: its scheduler, its deadlines, its done bits and figures; its path sees only `scope`. */
class Invocation<T extends EngineTask> {
  readonly #parts: EngineParts;
  readonly #options: LanesOptions;
  readonly #clock: Clock;
  readonly #path: RecordPath<T>;
  readonly #scope: PathScope<T>;
  readonly #startedAt: number;
  readonly #stopStartingAt: number;
  readonly #abortRunningAt: number;
  readonly #scheduler: LaneScheduler<T>;
  readonly #stop = new AbortController();
  readonly #deadlines: RecordDeadlines;
  readonly #doneBits: DoneBits;
  readonly #outputs: OutputBatches;
  readonly #report = new RunReport();
  readonly #redelivered: RecordCoordinates[] = [];
  /** Records that could be neither handed off nor named in a partial batch response (no offset). */
  #unreportable = 0;
  /** Copies left for a later round (`CopyWait` `suspend`). */
  #waiting: Waiting | undefined;
  /** Records started and not settled. */
  #running = 0;
  /** Partitions whose admission has not finished: more tasks may still come. */
  #admitting = 0;
  #filling = false;
  /** Resolves the wait for idleness once nothing runs, nothing is ready and no admission is pending. */
  #settle: () => void = noop;
  /** Each partition's admission, settled once its whole batch is admitted. */
  readonly #admissions = new Map<string, Promise<unknown>>();

  constructor(parts: EngineParts, clock: Clock, path: RecordPath<T>, sink: HandOffSink, context: InvocationContext, copyWait: CopyWait) {
    this.#parts = parts;
    this.#options = parts.options;
    this.#clock = clock;
    this.#path = path;
    const options = parts.options;
    const now = (): number => clock.now();
    this.#startedAt = now();
    const remaining = context.getRemainingTimeInMillis();
    const margin = options.deadlineMarginMs;
    this.#stopStartingAt = this.#startedAt + remaining - margin;
    this.#abortRunningAt = this.#startedAt + remaining - margin / 2;
    // Hand-off writes and Redis calls are given up just before Lambda would freeze the invocation.
    const handOffSignal = deadlineSignal(Math.max(1, remaining - Math.min(250, margin / 4)));
    const store = parts.store.withLimits({ signal: handOffSignal });
    this.#scheduler = new LaneScheduler(options.concurrency);
    this.#deadlines = new RecordDeadlines(
      options.recordTimeoutMs,
      () => new RecordTimeoutError(`record timed out after ${options.recordTimeoutMs} ms`),
      (deadline) => this.#expired(deadline),
    );
    const logger = parts.telemetry.logger;
    const redeliver = (ref: PartitionRef, offsets: readonly number[], error?: unknown): void => {
      if (error !== undefined) {
        logger.error('records reported for redelivery', {
          partition: topicPartitionKey(ref.topic, ref.partition), offsets: offsets.slice(0, 20), count: offsets.length, error: describeError(error),
        });
      }
      for (const offset of offsets) this.#redelivered.push({ topic: ref.topic, partition: ref.partition, offset });
    };
    // Finished but not recorded: reported, so the event source redelivers them and they run again.
    const effectsPort = parts.effects;
    const effects = effectsPort?.withLimits === undefined ? effectsPort : effectsPort.withLimits({ signal: handOffSignal });
    this.#doneBits = invocationDoneBits(store, effects, logger, redeliver);
    const report = this.#report;
    this.#scope = {
      options,
      store,
      effects,
      effectsTtlMs: effectsTtlMs(options),
      logger,
      copies: copiesFor(options, now),
      leaseUntilMs: this.#startedAt + remaining + LEASE_SLACK_MS,
      stopStartingAt: this.#stopStartingAt,
      abortRunningAt: this.#abortRunningAt,
      stopSignal: this.#stop.signal,
      copyWait,
      now,
      write: (items) => writeHandOffs(sink, handOffSignal, items, report, logger),
      enqueue: (tasks) => {
        this.#scheduler.add(tasks);
        this.#fill();
      },
      drainLane: (partitionKey, lane) => this.#scheduler.drainLane(partitionKey, lane),
      leaveSlot: (task) => { this.#scheduler.leave(task); this.#fill(); },
      takeSlot: (task) => this.#scheduler.rejoin(task),
      admitted: (partitionKey) => this.#admitted(partitionKey),
      markDone: (ref, offset, again) => this.#doneBits.add(ref, offset, again),
      redeliver,
      unreportable: (count) => { this.#unreportable += count; },
      waiting: (wakeAtMs) => { this.#waiting = moreWaiting(this.#waiting, wakeAtMs); },
      count: (name, by) => report.count(name, by),
      window: (ref, window) => report.window(ref, window),
      guard: (work, partitionKey) => work.then(noop, (error: unknown) => {
        logger.error('unexpected fault handing off at admission', { partition: partitionKey, error: describeError(error) });
      }),
    };
    this.#outputs = new OutputBatches(this.#scope, sink, handOffSignal);
  }

  /** No record starts any more (a plain field: the signal's getter is costly on the run path of every record). */
  #stopped = false;

  async run(partitions: readonly PartitionBatch[]): Promise<InvocationOutcome> {
    const now = (): number => this.#clock.now();
    const flushTimer = setInterval(() => void this.#doneBits.flush(), this.#options.flushIntervalMs);
    // The invocation's own schedule, not a bound on one piece of work: plain timers, cleared when the run ends
    // (a deadline signal's timer cannot be).
    const stopTimer = setTimeout(() => this.#stopStarting(), Math.max(0, this.#stopStartingAt - now()));
    const abortTimer = setTimeout(() => this.#deadlines.expireAll(new DeadlineError()), Math.max(0, this.#abortRunningAt - now()));
    try {
      if (now() >= this.#stopStartingAt) this.#stopStarting();
      // Records start once their part of a batch is admitted (a path may enqueue in chunks), the rest still admitted.
      const idle = this.#idle();
      this.#admitting = partitions.length;
      const admitted = Promise.all(partitions.map((batch) => {
        this.#report.count('recordsIn', batchSize(batch));
        return this.#admit(batch);
      }));
      this.#fill();
      await idle;
      // Hand-offs found at admission run beside the records, so a slow one holds up no other key.
      await admitted;
      // Tasks added while the last ones finished (a lane drained inline) still need to run.
      await this.#drain();
      if (this.#stopped) {
        const unstarted = this.#scheduler.drainAll();
        if (unstarted.length > 0) await this.#path.deferUnstarted(this.#scope, unstarted);
      }
    } finally {
      clearInterval(flushTimer);
      clearTimeout(stopTimer);
      clearTimeout(abortTimer);
      this.#deadlines.close();
    }
    await this.#doneBits.flush();
    await awaitReplicas(this.#scope.store, this.#options);
    this.#report.publish(this.#parts.telemetry, this.#scope.logger, now() - this.#startedAt, this.#redelivered.length);
    return { response: batchResponse(this.#redelivered, this.#unreportable, this.#options.partialBatchResponse), waiting: this.#waiting };
  }

  /** Admits one partition's batch (a path may enqueue early chunks itself) and waits for its hand-offs. */
  async #admit(batch: PartitionBatch): Promise<void> {
    let handOffs: Promise<unknown>;
    try {
      const admission = this.#path.admit(this.#scope, batch);
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
  #admitted(partitionKey: string): Promise<void> {
    const admission = this.#admissions.get(partitionKey);
    return admission === undefined ? Promise.resolve() : admission.then(noop, noop);
  }

  #idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#settle = resolve;
    });
  }

  /** Waits until every task enqueued so far has settled. */
  #drain(): Promise<void> {
    if (this.#running === 0 && (this.#stopped || this.#scheduler.pendingCount === 0)) return Promise.resolve();
    const idle = this.#idle();
    this.#fill();
    return idle;
  }

  /**
   * Starts ready records, at most `concurrency` at once; called whenever that may change (tasks added, a
   * record settled, an admission ended). Resolves the wait for idleness once nothing is left to wait for.
   */
  #fill(): void {
    if (this.#filling) return;
    this.#filling = true;
    try {
      while (!this.#stopped) {
        const task = this.#scheduler.next();
        if (task === undefined) break;
        this.#running += 1;
        void this.#runGuarded(task);
      }
    } finally {
      this.#filling = false;
    }
    if (this.#running === 0 && this.#admitting === 0 && (this.#stopped || this.#scheduler.pendingCount === 0)) {
      const settle = this.#settle;
      this.#settle = noop;
      settle();
    }
  }

  /**
   * Runs one task to its end: the path's preparation, the handler within its deadline, then success or
   * failure. A fault of ours (not the handler's: those are caught around it) is settled here too. One async
   * function per record, no closures: this is the run path of every record. A handler still running when its
   * deadline comes is settled by the deadline (`#expired`), and this run then leaves the record alone.
   */
  async #runGuarded(task: T): Promise<void> {
    const scope = this.#scope;
    let released = false;
    /** The record's deadline came while its handler ran: `#expired` settles it. */
    let expired = false;
    try {
      if (this.#path.prepare !== undefined && !(await this.#path.prepare(scope, task))) return;
      if (this.#options.dedupeOutputs && (await isRepeatedOutput(scope, task))) {
        scope.count('duplicates');
        const succeeded = this.#path.succeeded(scope, task);
        if (succeeded !== undefined) await succeeded;
        return;
      }
      const deadline = this.#deadlines.start(task);
      let failed = false;
      let failure: unknown;
      let ctx: RecordContext | undefined;
      try {
        if (task.preset !== undefined) throw task.preset;
        ctx = new RecordContext(task, scope, Math.min(this.#clock.now() + this.#options.recordTimeoutMs, this.#abortRunningAt), deadline);
        // A promise only when a schema validates asynchronously; bounded by the record's deadline like the handler.
        let parts = readRecordParts(this.#options, task.record);
        if (parts instanceof Promise) parts = await deadline.race(parts);
        const run = this.#parts.handler(recordView(task, parts), ctx);
        if (deadline.expired) {
          // Past its deadline already (the invocation's hard stop): the record fails, whatever the handler does.
          if (isPromiseLike(run)) run.then(undefined, noop);
          throw deadline.reason;
        }
        if (isPromiseLike(run)) {
          // Awaited alone (no promise racing it: 1.5 µs per record). A handler that ignores its signal cannot hold
          // the invocation: its deadline's expiry fails the record (`#expired`), the handler goes on detached
          // (at-least-once allows it) and its late outcome is ignored here.
          deadline.handOver();
          await run;
          expired = deadline.expired;
          if (expired) return;
        }
      } catch (error) {
        expired = deadline.expired && deadline.handedOver;
        if (expired) return;
        if (error instanceof SchemaRegistryUnavailableError) throw error; // not an attempt: back to the event source (`#faulted`)
        failed = true;
        failure = error;
      } finally {
        if (!expired) {
          deadline.finish();
          this.#report.latencies.push(performance.now() - deadline.startedAt);
        }
      }
      const effects = ctx?.effects;
      if (!failed && effects !== undefined) {
        try {
          const outputs = await effects.seal();
          if (outputs.length > 0) {
            // The handler is over: while the broker acknowledges its outputs, its slot runs another lane's record
            // (its own lane waits until it is done).
            released = true;
            this.#scheduler.release();
            this.#fill();
            // Outputs are acknowledged before the record is done (G3 extended); a send that fails fails the record.
            await this.#outputs.send(outputs);
          }
        } catch (error) {
          failed = true;
          failure = error;
        }
      }
      if (failed) {
        await this.#path.failed(scope, task, failure);
      } else {
        const succeeded = this.#path.succeeded(scope, task);
        if (succeeded !== undefined) await succeeded;
        if (effects?.usedSteps === true) this.#doneBits.forget(effects.stored);
      }
    } catch (error) {
      await this.#faulted(task, error);
    } finally {
      if (!expired) this.#settled(task, released);
    }
  }

  /** A handler was still running when its record's deadline came: the record fails with the deadline's reason. */
  #expired(deadline: RecordDeadline): void {
    this.#report.latencies.push(performance.now() - deadline.startedAt);
    void this.#failExpired(deadline.subject as T, deadline.reason);
  }

  async #failExpired(task: T, reason: unknown): Promise<void> {
    try {
      await this.#path.failed(this.#scope, task, reason);
    } catch (error) {
      await this.#faulted(task, error);
    } finally {
      this.#settled(task, false);
    }
  }

  /** A fault of ours while settling a task: the path's, or the record and those waiting behind it go back to the event source. */
  async #faulted(task: T, error: unknown): Promise<void> {
    if (this.#path.faulted !== undefined) {
      this.#path.faulted(this.#scope, task, error);
      return;
    }
    await this.#admitted(task.partitionKey);
    const waiting = task.lane === undefined ? [] : this.#scheduler.drainLane(task.partitionKey, task.lane);
    this.#scope.redeliver(task.ref, [task.offset, ...waiting.map((w) => w.offset)], error);
  }

  /** A started task is over: its slot (unless `released` already) and its lane go to the next. */
  #settled(task: T, released: boolean): void {
    this.#running -= 1;
    this.#scheduler.finish(task, released);
    this.#fill();
  }

  #stopStarting(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stop.abort();
    this.#fill();
  }
}
