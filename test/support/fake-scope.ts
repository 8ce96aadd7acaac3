/**
 * A run scope without an engine, for unit tests of one record path alone (`SourcePath`, `RetryPath`): the completion
 * store is the in-memory model, the hand-off write is a recording one whose outcome a test chooses, the clock is a
 * number the test moves, and the lane scheduler is a map of queued tasks. Every step the path takes through the scope
 * lands in `events`, in order, so a test can say "blocked before written, written before done".
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { PartitionRef } from '../../src/ports/partition';
import { INLINE_WAIT, type EngineTask, type InvocationScope } from '../../src/engine/run-scope';
import type { CounterName } from '../../src/engine/run-report';
import { decodeKafkaEvent, encodeKafkaEvent, type KafkaRecord, type KafkaRecordInput, type PartitionBatch } from '../../src/event';
import { copiesFor } from '../../src/handoff/copies';
import type { HandOffItem, HandOffOutcome } from '../../src/ports/handoff';
import type { CompletionPort } from '../../src/ports/completion';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { CompletionModelStore } from '../../src/testing/completion-model';

export const SCOPE_GROUP = 'grp';
/** The source partition of the records a test makes (`record`, `batchOf`). */
export const SOURCE_REF: PartitionRef = { group: SCOPE_GROUP, topic: 'orders', partition: 0 };
/** The moment every fake scope starts at (epoch ms). */
export const T0 = 1_750_000_000_000;

/** The lane id of a Kafka key in key mode (base64 of the key bytes). */
export const laneOf = (key: string): string => Buffer.from(key).toString('base64');

/** What a test sets: a write's outcome per item, or a write that fails as a whole. */
export type WriteOutcome = (item: HandOffItem) => HandOffOutcome;

export const REFUSED: WriteOutcome = () => ({ status: 'refused', reason: 'too-large', error: { name: 'MESSAGE_TOO_LARGE', message: 'too large' } });

/** A run scope with the parts a path is given in its constructor: `new SourcePath(scope)` takes them from it. */
export type FakeScope<T extends EngineTask> = InvocationScope<T> & FakeRecords<T>;

interface FakeRecords<T extends EngineTask> {
  /** Every step, in order: `block <offset>`, `advance <offset> <attempt> <state>`, `release <offset>`, `write retry <origin offset>`, `done <offset>`, `redeliver <offsets>`, ... */
  readonly events: string[];
  /** What the write acknowledged (or was given, when it failed). */
  readonly written: HandOffItem[];
  readonly done: Array<{ ref: PartitionRef; offset: number; again: boolean }>;
  readonly redelivered: number[];
  /** When each copy left for a later round (`waiting`) is to be looked at again. */
  readonly waitingUntil: number[];
  readonly counts: Map<CounterName, number>;
  readonly enqueued: T[];
  readonly model: CompletionModelStore;
  /** Tasks waiting in the scheduler behind a lane's running head, by `<partitionKey>\n<lane>`. */
  readonly queued: Map<string, T[]>;
  /** Moves the clock. */
  clock: { ms: number };
  /** The next writes' outcome; a thrown error fails the whole write. */
  outcome: WriteOutcome | Error;
}

/**
 * A fake scope with the options a test gives (group `grp`, tiers 1s and 1m, 3 attempts, fixed 1 s backoff) and a
 * minute before the deadline.
 *
 * @example
 * const scope = fakeScope<SourceTask>({ deadLetter: { policy: 'hold' } });
 * await new SourcePath().failed(scope, task, new Error('down'));
 */
export function fakeScope<T extends EngineTask>(
  input: Partial<LanesOptionsInput> = {},
  model = new CompletionModelStore(),
  /** Store calls a test answers itself (Redis down, a loss suspected, the partition not marked yet). */
  answers: Partial<CompletionPort> = {},
): FakeScope<T> {
  const options = resolveOptions({
    group: SCOPE_GROUP,
    retry: { tiers: ['1s', '1m'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 1_000 } },
    ...input,
  } as LanesOptionsInput, {});
  const events: string[] = [];
  const clock = { ms: T0 };
  const now = (): number => clock.ms;
  const stop = new AbortController();
  const scope: FakeScope<T> = {
    events,
    written: [],
    done: [],
    redelivered: [],
    waitingUntil: [],
    counts: new Map(),
    enqueued: [],
    model,
    queued: new Map(),
    clock,
    outcome: () => ({ status: 'written' }),
    options,
    logger: new Logger({ logLevel: 'SILENT' }),
    store: { ...recordingStore(model, events), ...answers },
    effects: undefined,
    effectsTtlMs: 60_000,
    copies: copiesFor(options, now),
    leaseUntilMs: T0 + 90_000,
    stopStartingAt: T0 + 59_000,
    abortRunningAt: T0 + 59_500,
    stopSignal: stop.signal,
    copyWait: INLINE_WAIT,
    now,
    async write(items) {
      const outcome = scope.outcome;
      for (const item of items) events.push(`write ${item.kind} ${item.origin.offset}${item.deferred === true ? ' deferred' : ''}`);
      if (outcome instanceof Error) throw outcome;
      scope.written.push(...items);
      return items.map((item) => outcome(item));
    },
    enqueue(tasks) {
      for (const task of tasks) events.push(`enqueue ${task.offset}`);
      scope.enqueued.push(...tasks);
    },
    drainLane(partitionKey, lane) {
      const key = `${partitionKey}\n${lane}`;
      const tasks = scope.queued.get(key) ?? [];
      scope.queued.delete(key);
      return tasks;
    },
    admitted: async () => undefined,
    leaveSlot: () => undefined,
    takeSlot: async () => undefined,
    markDone(ref, offset, again = false) {
      events.push(`done ${ref.topic} ${offset}${again ? ' again' : ''}`);
      scope.done.push({ ref, offset, again });
    },
    redeliver(_ref, offsets) {
      events.push(`redeliver ${offsets.join(',')}`);
      scope.redelivered.push(...offsets);
    },
    unreportable: () => undefined,
    waiting(wakeAtMs) {
      events.push(`waiting until ${wakeAtMs - T0}`);
      scope.waitingUntil.push(wakeAtMs);
    },
    count(name, by = 1) {
      scope.counts.set(name, (scope.counts.get(name) ?? 0) + by);
    },
    window: () => undefined,
    guard: (work) => work.then(() => undefined),
  };
  return scope;
}

/** The model store, each lane move logged in `events` as it happens. */
function recordingStore(model: CompletionModelStore, events: string[]): CompletionPort {
  return {
    admit: (ref, records) => model.admit(ref, records),
    markDone: (ref, offsets) => model.markDone(ref, offsets),
    async block(ref, block) {
      const { head, parked } = block;
      events.push(`block ${head.offset} ${head.state}${parked === undefined || parked.length === 0 ? '' : ` parking ${parked.map((p) => p.offset).join(',')}`}`);
      return model.block(ref, block);
    },
    async release(ref, release) {
      events.push(`release ${release.headOffset}`);
      return model.release(ref, release);
    },
    async advance(ref, lane, expected, next) {
      events.push(`advance ${expected.offset} to ${next.attempt} ${next.state}${next.leaseUntilMs > 0 ? ' leased' : ''}`);
      return model.advance(ref, lane, expected, next);
    },
    laneHead: (ref, lane) => model.laneHead(ref, lane),
    claimHead: (ref, lane, expected, claim) => model.claimHead(ref, lane, expected, claim),
    withLimits() {
      return this;
    },
  };
}

/** A decoded source record of `orders-0` (as AWS sends it, so a park list can keep it). */
export function record(offset: number, key: string): KafkaRecord {
  return batchOf([{ topic: SOURCE_REF.topic, partition: 0, offset, timestamp: T0, key: Buffer.from(key), value: Buffer.from(`{"offset":${offset}}`) }]).records[0]!;
}

/** Records as the event source delivers them, decoded into one partition's batch. */
export function batchOf(records: readonly KafkaRecordInput[]): PartitionBatch {
  return decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records: [...records] })).partitions[0]!;
}
