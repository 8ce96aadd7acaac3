import { DeadlineError } from '../errors';
import { awaitReplicas } from './replicas';
import { batchSize, topicPartitionKey, type PartitionBatch, type RecordCoordinates } from '../event';
import type { LanesOptions } from '../options/lanes-options';
import { deadlineSignal } from '../deadline';
import { invocationDoneBits, type DoneBits } from './done-bits';
import { batchResponse, writeHandOffs } from './invocation-edges';
import { describeError } from '../lanes/outcome';
import type { Clock, CompletionPort, EffectsPort, HandOffSink, PartitionRef } from '../ports';
import { RecordRuns } from './record-run';
import { RunReport } from './run-report';
import { moreWaiting, type CopyWait, type EngineTask, type InvocationContext, type InvocationOutcome, type InvocationScope, type PathParts, type RecordPath, type RunScope, type Waiting } from './run-scope';
import { LaneScheduler } from './scheduler';
import type { Telemetry } from '../telemetry';
import type { RecordHandler } from './types';
import { OutputBatches } from './outputs';

export interface EngineParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  readonly store: CompletionPort;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
  /** Step results and output dedupe; without it `ctx.step` and `dedupeOutputs` are refused. */
  readonly effects?: EffectsPort;
  /** What the function's record paths are given too (`pathParts`); made from the options, logger and clock when absent. */
  readonly paths?: PathParts;
}

/** How long past its invocation's end a lease on a lane head lasts: the committer re-drives it after that. */
export const LEASE_SLACK_MS = 30_000;

/** What one invocation is made of: the engine's parts and clock, the record path, where hand-offs go, the Lambda context. */
export interface InvocationSetup<T extends EngineTask> {
  readonly parts: EngineParts;
  /** The function's path parts, taken once by the engine. */
  readonly paths: PathParts;
  readonly clock: Clock;
  readonly path: RecordPath<T>;
  readonly sink: HandOffSink;
  readonly context: InvocationContext;
  readonly copyWait: CopyWait;
}

const noop = (): void => undefined;

/** One invocation: its scheduler, its deadlines, its done bits and figures; its path sees only `scope`. */
export class Invocation<T extends EngineTask> {
  readonly #parts: EngineParts;
  readonly #options: LanesOptions;
  readonly #clock: Clock;
  readonly #path: RecordPath<T>;
  /** What the path sees: the run scope alone. */
  readonly #scope: RunScope<T>;
  /** What the engine's record runs read: the run scope with the function's parts. */
  readonly #inner: InvocationScope<T>;
  readonly #startedAt: number;
  readonly #stopStartingAt: number;
  readonly #abortRunningAt: number;
  readonly #scheduler: LaneScheduler<T>;
  readonly #stop = new AbortController();
  readonly #runs: RecordRuns<T>;
  readonly #doneBits: DoneBits;
  readonly #report = new RunReport();
  readonly #redelivered: RecordCoordinates[] = [];
  /** Records that could be neither handed off nor named in a partial batch response (no offset). */
  #unreportable = 0;
  /** Copies left for a later round (`CopyWait` `suspend`). */
  #waiting: Waiting | undefined;
  /** Partitions whose admission has not finished: more tasks may still come. */
  #admitting = 0;
  #filling = false;
  /** Resolves the wait for idleness once nothing runs, nothing is ready and no admission is pending. */
  #settle: () => void = noop;
  /** Each partition's admission, settled once its whole batch is admitted. */
  readonly #admissions = new Map<string, Promise<unknown>>();

  constructor({ parts, paths, clock, path, sink, context, copyWait }: InvocationSetup<T>) {
    this.#parts = parts;
    const options = parts.options;
    this.#options = options;
    this.#clock = clock;
    this.#path = path;
    this.#startedAt = clock.now();
    const remaining = context.getRemainingTimeInMillis();
    const margin = options.deadlineMarginMs;
    this.#stopStartingAt = this.#startedAt + remaining - margin;
    this.#abortRunningAt = this.#startedAt + remaining - margin / 2;
    // Hand-off writes and Redis calls are given up just before Lambda would freeze the invocation.
    const handOffSignal = deadlineSignal(Math.max(1, remaining - Math.min(250, margin / 4)));
    const store = parts.store.withLimits({ signal: handOffSignal });
    this.#scheduler = new LaneScheduler(options.concurrency);
    // Finished but not recorded: reported, so the event source redelivers them and they run again.
    const effectsPort = parts.effects;
    const effects = effectsPort?.withLimits === undefined ? effectsPort : effectsPort.withLimits({ signal: handOffSignal });
    this.#doneBits = invocationDoneBits(store, effects, parts.telemetry.logger, this.#redeliver);
    this.#scope = this.#makeScope({ store, effects, sink, handOffSignal, copyWait, leaseUntilMs: this.#startedAt + remaining + LEASE_SLACK_MS });
    this.#inner = { ...paths, ...this.#scope };
    const outputs = new OutputBatches(this.#scope, sink, handOffSignal);
    const fill = (): void => this.#fill();
    this.#runs = new RecordRuns({ handler: parts.handler, path, scope: this.#inner, scheduler: this.#scheduler, doneBits: this.#doneBits, outputs, report: this.#report, clock, fill });
  }

  /** Reports records for redelivery (the partial batch response), logging `error` with them when given. */
  readonly #redeliver = (ref: PartitionRef, offsets: readonly number[], error?: unknown): void => {
    if (error !== undefined) {
      this.#parts.telemetry.logger.error('records reported for redelivery', {
        partition: topicPartitionKey(ref.topic, ref.partition), offsets: offsets.slice(0, 20), count: offsets.length, error: describeError(error),
      });
    }
    for (const offset of offsets) this.#redelivered.push({ topic: ref.topic, partition: ref.partition, offset });
  };

  /** The run scope the path sees: closures over this invocation. */
  #makeScope(given: {
    store: CompletionPort; effects: EffectsPort | undefined; sink: HandOffSink; handOffSignal: AbortSignal; copyWait: CopyWait; leaseUntilMs: number;
  }): RunScope<T> {
    const { store, effects, sink, handOffSignal } = given;
    const clock = this.#clock;
    const logger = this.#parts.telemetry.logger;
    const report = this.#report;
    const edge = { sink, handOffSignal, report, logger };
    const now = (): number => clock.now();
    return {
      store, effects, now,
      leaseUntilMs: given.leaseUntilMs,
      stopStartingAt: this.#stopStartingAt,
      abortRunningAt: this.#abortRunningAt,
      stopSignal: this.#stop.signal,
      copyWait: given.copyWait,
      write: (items) => writeHandOffs(edge, items),
      enqueue: (tasks) => {
        this.#scheduler.add(tasks);
        this.#fill();
      },
      drainLane: (partitionKey, lane) => this.#scheduler.drainLane(partitionKey, lane),
      leaveSlot: (task) => { this.#scheduler.leave(task); this.#fill(); },
      takeSlot: (task) => this.#scheduler.rejoin(task),
      admitted: (partitionKey) => this.#admitted(partitionKey),
      markDone: (ref, offset, again) => this.#doneBits.add(ref, offset, again),
      redeliver: this.#redeliver,
      unreportable: (count) => { this.#unreportable += count; },
      waiting: (wakeAtMs) => { this.#waiting = moreWaiting(this.#waiting, wakeAtMs); },
      count: (name, by) => report.count(name, by),
      window: (ref, window) => report.window(ref, window),
      guard: (work, partitionKey) => work.then(noop, (error: unknown) => {
        logger.error('unexpected fault handing off at admission', { partition: partitionKey, error: describeError(error) });
      }),
    };
  }

  /** No record starts any more (a plain field: the signal's getter is costly on the run path of every record). */
  #stopped = false;

  async run(partitions: readonly PartitionBatch[]): Promise<InvocationOutcome> {
    const now = (): number => this.#clock.now();
    const flushTimer = setInterval(() => void this.#doneBits.flush(), this.#options.flushIntervalMs);
    // The invocation's own schedule, not a bound on one piece of work: plain timers, cleared when the run ends
    // (a deadline signal's timer cannot be).
    const stopTimer = setTimeout(() => this.#stopStarting(), Math.max(0, this.#stopStartingAt - now()));
    const abortTimer = setTimeout(() => this.#runs.deadlines.expireAll(new DeadlineError()), Math.max(0, this.#abortRunningAt - now()));
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
      this.#runs.deadlines.close();
    }
    await this.#doneBits.flush();
    await awaitReplicas(this.#scope.store, this.#options);
    this.#report.publish(this.#parts.telemetry, this.#parts.telemetry.logger, now() - this.#startedAt, this.#redelivered.length);
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
    if (this.#runs.running === 0 && (this.#stopped || this.#scheduler.pendingCount === 0)) return Promise.resolve();
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
        this.#runs.start(task);
      }
    } finally {
      this.#filling = false;
    }
    if (this.#runs.running === 0 && this.#admitting === 0 && (this.#stopped || this.#scheduler.pendingCount === 0)) {
      const settle = this.#settle;
      this.#settle = noop;
      settle();
    }
  }

  #stopStarting(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stop.abort();
    this.#fill();
  }
}
