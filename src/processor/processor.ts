import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  batchItemFailures,
  decodeKafkaEvent,
  isDecodeFailure,
  planOffsets,
  topicPartitionKey,
  type DecodeFailure,
  type Delivered,
  type OffsetSlot,
  type KafkaBatchResponse,
  type KafkaHeader,
  type KafkaRecord,
  type RecordCoordinates,
  type TimestampType,
} from '../event';
import { CompletionStore, type PartitionRef } from '../completion';
import { jsonText } from '../describe';
import { LanesError } from '../errors';
import type { HandOffItem, HandOffOutcome } from '../handoff';
import { backoffDelay, deadLetterTopic, DeserializationError, readRecordParts, retryTopicFor, type RecordParts } from '../options';
import { laneIdOf } from './lane-id';
import type { LanesOptions } from './options';
import { decideFailure, describeError, type DeadLetterReason, type FailureDecision } from './outcome';
import { LaneScheduler, type Task } from './scheduler';
import { METRIC, MetricUnit, type Telemetry } from './telemetry';

/** What a handler sees of a record: decoded key and value, headers, origin and timestamp. */
export interface LanesRecord<V = unknown, K = unknown> {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly timestampType: TimestampType;
  readonly key: K;
  readonly value: V;
  readonly rawKey: Buffer | null;
  readonly rawValue: Buffer | null;
  readonly headers: readonly KafkaHeader[];
  /** Where the record was first read (a retry copy carries its origin in headers). */
  readonly origin: RecordCoordinates;
}

/** The capabilities a handler gets for one record. */
export interface LanesContext {
  /** 1 for the first run; retries count up to `retry.maxAttempts`. */
  readonly attempt: number;
  /** Aborts at the per-record timeout and before the invocation's deadline. */
  readonly signal: AbortSignal;
  /** Epoch ms after which the record counts as failed. */
  readonly deadline: number;
  readonly logger: Logger;
}

export type RecordHandler<V = unknown, K = unknown> = (record: LanesRecord<V, K>, ctx: LanesContext) => unknown;

/** The part of the Lambda context the processor needs. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  readonly awsRequestId?: string;
}

/**
 * Writes retry and dead-letter copies; resolves once each is acknowledged (acks=all) or, refused for good by
 * the broker, replaced by an acknowledged dead letter without its value: one outcome per item (`HandOffOutcome`).
 */
export interface HandOffSink {
  /** `signal` aborts a write that would outlive the invocation. */
  write(items: readonly HandOffItem[], options?: { signal?: AbortSignal }): Promise<readonly HandOffOutcome[]>;
}

export interface ProcessorParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  readonly redis: Redis | Cluster;
  /** The hand-off writer for an event's brokers (`options.kafka.brokers` win when set). */
  readonly handOff: (bootstrapServers: readonly string[]) => HandOffSink;
  readonly telemetry: Telemetry;
  readonly now?: () => number;
}

/** Raised when records could not be handed off and the event source has no partial batch response. */
export class BatchNotHandedOffError extends LanesError {}

interface RecordTask extends Task {
  readonly ref: PartitionRef;
  readonly record: KafkaRecord;
  readonly attempt: number;
  /** Set when the record cannot run at all (its `keyOf` threw): it fails with this at once. */
  readonly preset?: unknown;
}

const noop = (): void => undefined;

/**
 * The processor of DESIGN.md section 4: one instance per function (module scope), `process` per
 * invocation. Runs records concurrently, one at a time per lane in offset order, sets done bits in
 * batched Redis calls, hands failures to the retry topic and returns before the Lambda deadline.
 *
 * @example
 * const processor = new Processor({ options, handler, redis, handOff, telemetry });
 * export const main = (event: unknown, context: Context) => processor.process(event, context);
 */
export class Processor {
  readonly parts: ProcessorParts;
  readonly store: CompletionStore;
  readonly #now: () => number;

  constructor(parts: ProcessorParts) {
    this.parts = parts;
    this.store = new CompletionStore(parts.redis, parts.options.caps);
    this.#now = parts.now ?? Date.now;
  }

  /** Processes one Kafka trigger event; throws only for a malformed event or when nothing can be reported. */
  async process(event: unknown, context: InvocationContext): Promise<KafkaBatchResponse> {
    const decoded = decodeKafkaEvent(event);
    const startedAt = this.#now();
    const invocation = new Invocation(this, this.parts.handOff(decoded.bootstrapServers), context, startedAt, this.#now);
    return invocation.run(decoded.partitions);
  }
}

interface Counters {
  recordsIn: number;
  done: number;
  duplicates: number;
  parked: number;
  retried: number;
  deadLettered: number;
  deferred: number;
  refused: number;
}

/** The state of one invocation. */
class Invocation {
  readonly #processor: Processor;
  readonly #options: LanesOptions;
  readonly #sink: HandOffSink;
  readonly #now: () => number;
  readonly #startedAt: number;
  /** No record starts after this (epoch ms). */
  readonly #stopStartingAt: number;
  /** Running records are aborted at this point, leaving half the margin to hand them off. */
  readonly #abortRunningAt: number;
  readonly #scheduler: LaneScheduler<RecordTask>;
  /** Cancels each running record (its signal aborts and it counts as failed); called at the hard stop. */
  readonly #cancels = new Set<(reason: unknown) => void>();
  #deadlineReason: unknown;
  /** Handler run times in ms, summarised into the latency metric once per invocation. */
  readonly #latencies: number[] = [];
  readonly #pendingDone = new Map<string, { ref: PartitionRef; offsets: number[] }>();
  readonly #notHandedOff: RecordCoordinates[] = [];
  /** Records that could be neither handed off nor named in a partial batch response (no offset). */
  #unreportable = 0;
  readonly #counters: Counters = {
    recordsIn: 0, done: 0, duplicates: 0, parked: 0, retried: 0, deadLettered: 0, deferred: 0, refused: 0,
  };
  readonly #frontiers: Array<{ key: string; frontier: number; highest: number }> = [];
  /** Aborts hand-off writes just before Lambda would freeze the invocation: unacknowledged means not done. */
  readonly #handOffSignal: AbortSignal;
  /** The completion store, its calls given up at the same point (a Redis answer after it is no answer). */
  readonly #store: CompletionStore;
  #stopped = false;
  #running = new Set<Promise<void>>();
  #wake: () => void = noop;
  #flushing: Promise<void> = Promise.resolve();

  constructor(processor: Processor, sink: HandOffSink, context: InvocationContext, startedAt: number, now: () => number) {
    this.#processor = processor;
    this.#options = processor.parts.options;
    this.#sink = sink;
    this.#now = now;
    this.#startedAt = startedAt;
    const remaining = context.getRemainingTimeInMillis();
    const margin = this.#options.deadlineMarginMs;
    this.#stopStartingAt = startedAt + remaining - margin;
    this.#abortRunningAt = startedAt + remaining - margin / 2;
    this.#handOffSignal = AbortSignal.timeout(Math.max(1, remaining - Math.min(250, margin / 4)));
    this.#store = processor.store.withLimits({ signal: this.#handOffSignal });
    this.#scheduler = new LaneScheduler(this.#options.concurrency);
  }

  get #logger(): Logger {
    return this.#processor.parts.telemetry.logger;
  }

  async run(partitions: ReturnType<typeof decodeKafkaEvent>['partitions']): Promise<KafkaBatchResponse> {
    const flushTimer = setInterval(() => void this.#flush(), this.#options.flushIntervalMs);
    const stopTimer = setTimeout(() => this.#stopStarting(), Math.max(0, this.#stopStartingAt - this.#now()));
    const abortTimer = setTimeout(() => this.#abortRunning(), Math.max(0, this.#abortRunningAt - this.#now()));
    try {
      const admitted = await Promise.all(partitions.map((batch) => this.#admit(batch.topic, batch.partition, batch.records, batch.failures)));
      for (const { tasks } of admitted) this.#scheduler.add(tasks);
      if (this.#now() >= this.#stopStartingAt) this.#stopStarting();
      await this.#pump();
      // Hand-offs found at admission run beside the records, so a slow one holds up no other key (G6).
      await Promise.all(admitted.map(({ handOffs }) => handOffs));
      if (this.#stopped) await this.#deferUnstarted();
    } finally {
      clearInterval(flushTimer);
      clearTimeout(stopTimer);
      clearTimeout(abortTimer);
    }
    await this.#flush();
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
    if (failures.length > 0 && !this.#options.partialBatchResponse) {
      throw new BatchNotHandedOffError(
        `${failures.length} record(s) could not be handed off (first: ${topicPartitionKey(failures[0]!.topic, failures[0]!.partition)}@${failures[0]!.offset}); failing the invocation so the event source redelivers the batch`,
        { retriable: true },
      );
    }
    return batchItemFailures(failures);
  }

  // ---- admission ---------------------------------------------------------------------------------

  /**
   * Admits one partition's records. Returns the records to run, and the hand-offs admission found (lane
   * heads redelivered, malformed records) as a promise that the caller awaits after the runs.
   */
  async #admit(
    topic: string,
    partition: number,
    records: KafkaRecord[],
    failures: DecodeFailure[],
  ): Promise<{ tasks: RecordTask[]; handOffs: Promise<unknown> }> {
    const ref: PartitionRef = { group: this.#options.group, topic, partition };
    const partitionKey = topicPartitionKey(topic, partition);
    this.#counters.recordsIn += records.length + failures.length;

    // Records sharing an offset: identical copies run once, differing ones are all dead-lettered.
    const plan = planOffsets(records, failures);
    this.#counters.duplicates += plan.duplicates;
    // A malformed record with an unreadable offset cannot get a done bit: dead-letter it and go on.
    const unplaced = this.#guard(this.#deadLetterMalformed(ref, plan.unplaced), partitionKey);

    type Entry = OffsetSlot & { lane?: string; preset?: unknown };
    const entries = plan.slots.map((slot): Entry => {
      if (slot.record === undefined) return slot;
      const entry: Entry = { ...slot };
      try {
        entry.lane = laneIdOf(slot.record, this.#options);
      } catch (error) {
        // Without its lane the record cannot run in order: it is dead-lettered like an unreadable key.
        entry.preset = new DeserializationError('key', slot.record, `keyOf threw: ${describeError(error).message}`, { cause: error });
      }
      return entry;
    });

    let result;
    try {
      result = await this.#store.admit(
        ref,
        // A payload is built only if admit finds the record's lane blocked and parks it.
        entries.map(({ offset, lane, record }) => ({ offset, lane, payload: record === undefined ? undefined : () => parkPayload(record) })),
      );
    } catch (error) {
      this.#logger.error('cannot admit batch: Redis unreachable or refused; the whole partition will be redelivered', {
        partition: partitionKey, error: describeError(error),
      });
      for (const entry of entries) this.#notHanded(ref, entry.offset);
      return { tasks: [], handOffs: unplaced };
    }
    if (result.window !== undefined) this.#frontiers.push({ key: partitionKey, ...result.window });
    if (result.backPressure) {
      this.#logger.warn('back-pressure: records refused at the window or parked cap; the event source will redeliver them', {
        partition: partitionKey, caps: this.#options.caps, window: result.window,
      });
    }

    const tasks: RecordTask[] = [];
    const malformed: DecodeFailure[] = [];
    const conflicts: Array<{ offset: number; versions: readonly Delivered[] }> = [];
    const heads: KafkaRecord[] = [];
    const headEntries = result.handoffHeads.values();
    entries.forEach((entry, i) => {
      const status = result.statuses[i];
      if (status === 'duplicate') this.#counters.duplicates += 1;
      else if (status === 'parked') this.#counters.parked += 1;
      else if (status === 'refused') {
        this.#counters.refused += 1;
        this.#notHanded(ref, entry.offset);
      } else if (entry.conflict !== undefined) {
        conflicts.push({ offset: entry.offset, versions: entry.conflict });
      } else if (entry.failure !== undefined) {
        malformed.push(entry.failure);
      } else if (status === 'handoff') {
        heads.push(entry.record!);
      } else {
        tasks.push({ partitionKey, lane: entry.lane, offset: entry.offset, ref, record: entry.record!, attempt: 1, preset: entry.preset });
      }
    });
    const now = this.#now();
    // The head of a blocked lane, redelivered before its hand-off was known to complete: hand it off again
    // as Redis recorded it (a held head to the dead-letter topic, a retrying one with its attempt and due
    // time); the retry function drops whichever copy is no longer the lane's head.
    const redelivered = heads.map((record) => {
      const head = headEntries.next().value;
      if (head?.state === 'held') {
        return this.#deadLetterItem(record, head.attempt, now, (head.reason || 'non-retriable') as DeadLetterReason, {
          name: 'HeldLane', message: 'dead-lettered again: the first dead-letter write was not known to complete',
        });
      }
      return this.#retryItem(record, head?.attempt ?? 1, head?.dueAtMs ?? now, now, undefined, false);
    });
    const handOffs = this.#guard(Promise.all([
      unplaced,
      this.#writeAndMarkDone(ref, redelivered, () => {
        for (const item of redelivered) {
          if (item.kind === 'retry') this.#counters.retried += 1;
          else this.#counters.deadLettered += 1;
        }
      }),
      this.#deadLetterMalformed(ref, malformed),
      this.#deadLetterConflicts(ref, conflicts),
    ]), partitionKey);
    return { tasks, handOffs };
  }

  /**
   * Each hand-off reports its own failures; this only keeps a fault of ours from ending the process with an
   * unhandled rejection: admission's hand-offs are awaited only after the runs, long after they may fail.
   */
  #guard(work: Promise<unknown>, partitionKey: string): Promise<void> {
    return work.then(noop, (error: unknown) => {
      this.#logger.error('unexpected fault handing off at admission', { partition: partitionKey, error: describeError(error) });
    });
  }

  /** Writes hand-off copies, then marks their records done; reports them as not handed off on failure. */
  async #writeAndMarkDone(ref: PartitionRef, items: readonly HandOffItem[], count: () => void): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.#sink.write(items, { signal: this.#handOffSignal });
    } catch (error) {
      this.#handOffFailed(ref, items.map((item) => item.record.offset), error);
      return;
    }
    count();
    for (const item of items) this.#markDone(ref, item.record.offset);
  }

  // ---- running -----------------------------------------------------------------------------------

  /** Starts ready records until none is left, at most `concurrency` at once. */
  async #pump(): Promise<void> {
    for (;;) {
      while (!this.#stopped) {
        const task = this.#scheduler.next();
        if (task === undefined) break;
        const running: Promise<void> = this.#runTask(task).catch((error: unknown) => {
          // A fault of ours, not the handler's (those are caught inside): the record and the records
          // waiting behind it in its lane go back to the event source, never on out of order.
          const waiting = task.lane === undefined ? [] : this.#scheduler.drainLane(task.partitionKey, task.lane);
          this.#handOffFailed(task.ref, [task.offset, ...waiting.map((w) => w.offset)], error);
        }).finally(() => {
          this.#running.delete(running);
          this.#scheduler.finish(task);
          this.#wake();
        });
        this.#running.add(running);
      }
      if (this.#running.size === 0) return;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = noop;
    }
  }

  #stopStarting(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#wake();
  }

  #abortRunning(): void {
    this.#deadlineReason = new DeadlineError();
    for (const cancel of this.#cancels) cancel(this.#deadlineReason);
  }

  /**
   * Runs one record. Cheap on purpose (it runs for every record): the `AbortController` behind
   * `ctx.signal` is only made when the handler reads it, and one shared deadline walks the running set
   * instead of each record listening on a signal.
   */
  async #runTask(task: RecordTask): Promise<void> {
    const deadline = Math.min(this.#now() + this.#options.recordTimeoutMs, this.#abortRunningAt);
    let controller: AbortController | undefined;
    let cancelReason: unknown;
    let rejectRun: (reason: unknown) => void = noop;
    const cancel = (reason: unknown): void => {
      if (cancelReason !== undefined) return;
      cancelReason = reason;
      controller?.abort(reason);
      rejectRun(reason);
    };
    const timer = setTimeout(
      () => cancel(new RecordTimeoutError(`record timed out after ${this.#options.recordTimeoutMs} ms`)),
      Math.max(0, deadline - this.#now()),
    );
    this.#cancels.add(cancel);
    if (this.#deadlineReason !== undefined) cancel(this.#deadlineReason);
    const started = performance.now();
    let failure: { error: unknown } | undefined;
    try {
      if (task.preset !== undefined) throw task.preset;
      if (cancelReason !== undefined) throw cancelReason;
      const { record } = task;
      // A promise only when a schema validates asynchronously; bounded by the record's deadline like the handler.
      let parts = readRecordParts(this.#options, record);
      if (parts instanceof Promise) {
        const pending = parts;
        parts = await new Promise<RecordParts>((resolve, reject) => {
          rejectRun = reject;
          pending.then(resolve, reject);
        });
      }
      const view: LanesRecord = {
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
        origin: { topic: record.topic, partition: record.partition, offset: record.offset },
      };
      const ctx: LanesContext = {
        attempt: task.attempt,
        deadline,
        logger: this.#logger,
        get signal(): AbortSignal {
          if (controller === undefined) {
            controller = new AbortController();
            if (cancelReason !== undefined) controller.abort(cancelReason);
          }
          return controller.signal;
        },
      };
      const run = this.#processor.parts.handler(view, ctx);
      if (isPromiseLike(run)) {
        // A handler that ignores its signal cannot hold the invocation past the record's deadline: the
        // record counts as failed and the handler goes on detached (at-least-once allows it).
        await new Promise<void>((resolve, reject) => {
          rejectRun = reject;
          run.then(() => resolve(), reject);
        });
      }
    } catch (error) {
      failure = { error };
    } finally {
      clearTimeout(timer);
      this.#cancels.delete(cancel);
      this.#latencies.push(performance.now() - started);
    }
    if (failure === undefined) {
      this.#markDone(task.ref, task.offset);
      this.#counters.done += 1;
    } else {
      await this.#fail(task, failure.error);
    }
  }

  /** A failed attempt: block the lane and hand the record to the retry topic, or dead-letter it. */
  async #fail(task: RecordTask, error: unknown): Promise<void> {
    const decision = decideFailure(error, task.attempt, this.#options.retry.maxAttempts);
    const blocksLane = task.lane !== undefined && (decision.action === 'retry' || this.#options.deadLetter.policy === 'hold');
    // Taken before any await: the lane's later records must not start once its head failed.
    const parked = blocksLane ? this.#scheduler.drainLane(task.partitionKey, task.lane!) : [];
    try {
      await this.#handOff(task, error, decision, blocksLane ? parked : undefined);
    } catch (handOffError) {
      // Not handed off: the record goes back to the event source, and so does every record waiting behind
      // it in its lane (parked ones were drained above; under `release` they still wait in the scheduler),
      // or they would run before it.
      const waiting = task.lane === undefined ? [] : this.#scheduler.drainLane(task.partitionKey, task.lane);
      this.#handOffFailed(task.ref, [task.offset, ...parked.map((p) => p.offset), ...waiting.map((w) => w.offset)], handOffError);
    }
  }

  /**
   * Writes the failed record to its retry or dead-letter topic, and only then marks it done (G3). When the
   * lane blocks, the lane's head and its parked followers are recorded in Redis first, so the retry function
   * always finds the head it is given. Throws when the record could not be handed off.
   */
  async #handOff(task: RecordTask, error: unknown, decision: FailureDecision, parked: RecordTask[] | undefined): Promise<void> {
    const now = this.#now();
    const described = describeError(error);
    this.#logger.warn('record failed', {
      partition: task.partitionKey, offset: task.offset, attempt: task.attempt, error: described,
      decision: decision.action, ...(decision.action === 'dead-letter' ? { reason: decision.reason } : {}),
    });
    const retrying = decision.action === 'retry';
    const item = retrying
      ? this.#retryItem(task.record, task.attempt + 1, now + (decision.delayMs ?? backoffDelay(this.#options.retry.backoff, task.attempt)), now, described, false)
      : this.#deadLetterItem(task.record, task.attempt, now, decision.reason, described);
    if (parked !== undefined) {
      await this.#store.block(
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
      this.#counters.parked += parked.length;
      // From here the followers are parked and done: only the head itself is left to hand off.
      parked.length = 0;
    }
    await this.#sink.write([item], { signal: this.#handOffSignal });
    if (retrying) this.#counters.retried += 1;
    else this.#counters.deadLettered += 1;
    this.#markDone(task.ref, task.offset);
  }

  /** The deadline came: hand every record not started off to the retry path, attempt unchanged. */
  async #deferUnstarted(): Promise<void> {
    const unstarted = this.#scheduler.drainAll();
    if (unstarted.length === 0) return;
    const now = this.#now();
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
        await this.#store.block(
          head.ref,
          { lane: head.lane, offset: head.offset, attempt: head.attempt, state: 'retrying' },
          parked.map((p) => ({ offset: p.offset, payload: parkPayload(p.record) })),
        );
        this.#counters.parked += parked.length;
        return true;
      } catch (error) {
        this.#handOffFailed(head.ref, [head.offset, ...parked.map((p) => p.offset)], error);
        return false;
      }
    }));
    const deferred = heads.filter((_, i) => blocked[i]);
    if (deferred.length === 0) return;
    try {
      await this.#sink.write(deferred.map((task) => this.#retryItem(task.record, task.attempt, now, now, undefined, true)), { signal: this.#handOffSignal });
    } catch (error) {
      for (const task of deferred) this.#handOffFailed(task.ref, [task.offset], error);
      return;
    }
    this.#counters.deferred += deferred.length;
    for (const task of deferred) this.#markDone(task.ref, task.offset);
    this.#logger.info('deadline near: records not started were handed off to the retry topic', { deferred: deferred.length });
  }

  /**
   * Dead-letters records the event decoder could not read, with the reason, as one write. The copy's value
   * is the record's JSON as received. Those with a known offset are marked done once written.
   */
  async #deadLetterMalformed(ref: PartitionRef, failures: readonly DecodeFailure[]): Promise<void> {
    if (failures.length === 0) return;
    const now = this.#now();
    const items = failures.map((failure): HandOffItem => {
      this.#logger.error('malformed record: sent to the dead-letter topic', {
        partition: topicPartitionKey(failure.topic, failure.partition), offset: failure.offset, reason: failure.message,
      });
      return this.#malformedItem(failure, now, 'malformed', failure.message);
    });
    try {
      await this.#sink.write(items, { signal: this.#handOffSignal });
    } catch (error) {
      const placed = failures.flatMap((failure) => (failure.offset === undefined ? [] : [failure.offset]));
      this.#handOffFailed(ref, placed, error);
      if (placed.length < failures.length) {
        this.#unreportable += failures.length - placed.length;
        this.#logger.error('cannot dead-letter malformed records without an offset: the invocation will fail', {
          count: failures.length - placed.length, error: describeError(error),
        });
      }
      return;
    }
    this.#counters.deadLettered += failures.length;
    for (const failure of failures) if (failure.offset !== undefined) this.#markDone(ref, failure.offset);
  }

  /**
   * Dead-letters every version of offsets delivered more than once with differing contents, as one write;
   * each offset is marked done only once all its versions are acknowledged (a crash before loses none).
   */
  async #deadLetterConflicts(ref: PartitionRef, conflicts: ReadonlyArray<{ offset: number; versions: readonly Delivered[] }>): Promise<void> {
    if (conflicts.length === 0) return;
    const now = this.#now();
    const items = conflicts.flatMap(({ offset, versions }) => {
      const message = `offset ${offset} of ${topicPartitionKey(ref.topic, ref.partition)} was delivered ${versions.length} times with differing contents: every version is dead-lettered`;
      this.#logger.error('records share an offset: all sent to the dead-letter topic', { partition: topicPartitionKey(ref.topic, ref.partition), offset, versions: versions.length });
      return versions.map((version) => (isDecodeFailure(version)
        ? this.#malformedItem(version, now, 'duplicate-offset', `${message}; this one is malformed: ${version.message}`)
        : this.#deadLetterItem(version, 0, now, 'duplicate-offset', { name: 'DuplicateOffset', message })));
    });
    try {
      await this.#sink.write(items, { signal: this.#handOffSignal });
    } catch (error) {
      this.#handOffFailed(ref, conflicts.map(({ offset }) => offset), error);
      return;
    }
    this.#counters.deadLettered += items.length;
    for (const { offset } of conflicts) this.#markDone(ref, offset);
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
    return {
      ...this.#deadLetterItem(record, 0, now, reason, { name: 'DecodeFailure', message }),
      origin: { topic: failure.topic, partition: failure.partition, offset: failure.offset },
    };
  }

  #retryItem(record: KafkaRecord, attempt: number, dueAtMs: number, firstFailureAtMs: number, error: { name: string; message: string } | undefined, deferred: boolean): HandOffItem {
    const { group, retry } = this.#options;
    return {
      record,
      origin: { topic: record.topic, partition: record.partition, offset: record.offset },
      kind: 'retry',
      topic: retryTopicFor(group, retry.tiers, Math.max(0, dueAtMs - this.#now())),
      attempt,
      dueAtMs,
      firstFailureAtMs,
      ...(error === undefined ? {} : { error }),
      deferred,
    };
  }

  #deadLetterItem(record: KafkaRecord, attempt: number, now: number, reason: DeadLetterReason, error: { name: string; message: string }): HandOffItem {
    return {
      record,
      origin: { topic: record.topic, partition: record.partition, offset: record.offset },
      kind: 'dead-letter',
      topic: deadLetterTopic(this.#options.group),
      attempt,
      dueAtMs: now,
      firstFailureAtMs: now,
      error,
      reason,
    };
  }

  // ---- done bits ---------------------------------------------------------------------------------

  #markDone(ref: PartitionRef, offset: number): void {
    const key = topicPartitionKey(ref.topic, ref.partition);
    const pending = this.#pendingDone.get(key);
    if (pending === undefined) this.#pendingDone.set(key, { ref, offsets: [offset] });
    else pending.offsets.push(offset);
  }

  /** Sends pending done bits, one script call per partition; flushes never overlap. */
  #flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const batches = [...this.#pendingDone.values()].filter((p) => p.offsets.length > 0).map((p) => ({ ref: p.ref, offsets: p.offsets.splice(0) }));
      await Promise.all(batches.map(async ({ ref, offsets }) => {
        try {
          await this.#store.markDone(ref, offsets);
        } catch (error) {
          // Finished but not recorded: report them, so the event source redelivers and they run again.
          this.#handOffFailed(ref, offsets, error);
        }
      }));
    });
    return this.#flushing;
  }

  #handOffFailed(ref: PartitionRef, offsets: readonly number[], error: unknown): void {
    this.#logger.error('records could not be handed off; reported for redelivery', {
      partition: topicPartitionKey(ref.topic, ref.partition), offsets: offsets.slice(0, 20), count: offsets.length, error: describeError(error),
    });
    for (const offset of offsets) this.#notHanded(ref, offset);
  }

  #notHanded(ref: PartitionRef, offset: number): void {
    this.#notHandedOff.push({ topic: ref.topic, partition: ref.partition, offset });
  }

  #report(): void {
    const { metrics } = this.#processor.parts.telemetry;
    const c = { ...this.#counters, notHandedOff: this.#notHandedOff.length };
    metrics.addMetric(METRIC.recordsIn, MetricUnit.Count, c.recordsIn);
    metrics.addMetric(METRIC.done, MetricUnit.Count, c.done);
    metrics.addMetric(METRIC.duplicates, MetricUnit.Count, c.duplicates);
    metrics.addMetric(METRIC.parked, MetricUnit.Count, c.parked);
    metrics.addMetric(METRIC.retried, MetricUnit.Count, c.retried);
    metrics.addMetric(METRIC.deadLettered, MetricUnit.Count, c.deadLettered);
    metrics.addMetric(METRIC.deferred, MetricUnit.Count, c.deferred);
    metrics.addMetric(METRIC.refused, MetricUnit.Count, c.refused);
    metrics.addMetric(METRIC.notHandedOff, MetricUnit.Count, c.notHandedOff);
    const durationMs = this.#now() - this.#startedAt;
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
    this.#logger.info('batch processed', { ...c, durationMs, partitions: this.#frontiers.length });
  }
}

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

/** What a park list keeps of a record: the record exactly as AWS sent it, so it decodes like a fresh one. */
function parkPayload(record: KafkaRecord): string {
  return jsonText(record.raw);
}

/** At most `count` values, evenly spaced through the sorted values (all of them when there are fewer). */
export function quantiles(values: readonly number[], count: number): number[] {
  if (values.length <= count) return [...values];
  const sorted = [...values].sort((a, b) => a - b);
  return Array.from({ length: count }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (count - 1))]!);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
