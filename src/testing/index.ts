/**
 * kafka-lanes/testing: runs the handler `lanes(options, fn)` returns over records in a jest or vitest test, with no
 * Kafka and no Redis. The handler's own engine runs (admission, per-key lanes, retries through the retry tiers,
 * dead letters, the dead-letter policy, steps, outputs, idempotency keys) on the in-memory completion and effects
 * models and a hand-off writer that keeps what it is given; the retry function's invocations are played with a
 * clock that jumps to each copy's due time, so a retry due in ten minutes runs at once.
 *
 * @example
 * import { testLanes } from 'kafka-lanes/testing';
 * import { handler } from '../src/orders';
 *
 * const t = testLanes(handler, { topic: 'orders' });
 * await t.run([{ key: 'c-1', value: { orderId: 'o-1', customerId: 'c-1', amount: 5 } }]);
 * t.runs.map((run) => run.offset); // [0]
 * t.outputs[0]?.value;             // { orderId: 'o-1', paymentId: ... }
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LanesContext, LanesRecord, RecordHandler } from '../engine/types';
import { decodeKafkaEvent, encodeKafkaEvent, type KafkaBatchResponse, type KafkaRecord, type KafkaRecordInput } from '../event';
import { sendDeclared, declaredOutputs } from '../handler/declared-outputs';
import { LanesCore } from '../handler/lanes-core';
import { RESOLVE_OPTIONS, TEST_ENGINE, type LanesHandler } from '../handler/lanes';
import type { Context } from 'aws-lambda';
import type { LanesOptions } from '../options/lanes-options';
import type { HandOffItem, HandOffOutcome, OutputMessage, HandOffSink } from '../ports/handoff';
import { isPromiseLike } from '../engine/record-context';
import { OUTPUT_HEADER } from '../lanes/effects';
import { parseOutputId } from '../engine/outputs';
import { laneIdOf, NULL_KEY_LANE, PARTITION_LANE } from '../lanes/lane-id';
import type { DeadLetterReason } from '../lanes/outcome';
import { releaseHeldLane } from '../retry/operator';
import { logServiceName } from '../telemetry';
import { CompletionModelStore } from './completion-model';
import { copyRecord } from './retry-copies';

import { DroppedMetrics, NotedEffects, bytesOf, readValue, text, valueBytes, type Mutable } from './recorders';
import type { LanesTest, TestDeadLetter, TestHeldLane, TestLanesOptions, TestOutput, TestRecord, TestRetry, TestRun, TestStep } from './types';

export type { LanesTest, TestDeadLetter, TestError, TestHeldLane, TestLanesOptions, TestOrigin, TestOutput, TestRecord, TestRetry, TestRun, TestStep } from './types';
export { CompletionModel, CompletionModelStore } from './completion-model';
export { EffectsModel, OutputLog } from './effects-model';

const originId = (o: { readonly topic: string; readonly partition: number; readonly offset: number | undefined }): string => `${o.topic}\n${o.partition}\n${o.offset}`;

/** The lane key of a record as text: what `keyOf` returns, else the record key; `null` for none. */
function laneKeyText(record: KafkaRecord, options: LanesOptions): string | null {
  const key = options.keyOf === undefined ? record.key : options.keyOf(record);
  if (key === null || key === undefined) return null;
  return typeof key === 'string' ? key : key.toString('utf8');
}

/** A Lambda context as the runtime gives one, carrying the test's engine for the handler's base to run. */
function testContext(group: string, invocation: number, getRemainingTimeInMillis: () => number, engine: (event: unknown) => Promise<KafkaBatchResponse>): Context {
  const functionName = `${group}-test`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: `test-invocation-${invocation}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'test',
    getRemainingTimeInMillis,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
    [TEST_ENGINE]: engine,
  } as Context;
}

/** What `testLanes` runs: the handler `lanes()` returns (with any `.use()`d middlewares), or its options and record function. */
export type TestedHandler<V, K> = Pick<LanesHandler<V, K>, 'options' | 'recordHandler'> & Partial<Pick<LanesHandler<V, K>, typeof RESOLVE_OPTIONS>>;

/** The handler's options, resolved again when the test gives a group or an environment. */
function optionsUnderTest<V, K>(handler: TestedHandler<V, K>, group: string | undefined, env: NodeJS.ProcessEnv | undefined): LanesOptions {
  const resolve = handler[RESOLVE_OPTIONS];
  if (group === undefined && env === undefined) return handler.options;
  if (resolve !== undefined) return resolve(env ?? process.env, group);
  // Options and a record function put together by hand: the group given replaces theirs.
  return group === undefined ? handler.options : { ...handler.options, group };
}

/**
 * Puts the handler `lanes(options, fn)` returned under test: its options and its record function run on the real
 * engine, over the in-memory completion and effects models, with no Kafka and no Redis.
 *
 * @example
 * const t = testLanes(handler, { topic: 'orders' });
 * await t.run([{ key: 'c-1', value: order }, { key: 'c-1', value: next }]);
 * expect(t.order('c-1', { topic: 'orders' })).toEqual([0, 1]);
 */
export function testLanes<V, K>(handler: TestedHandler<V, K>, testOptions: TestLanesOptions = {}): LanesTest<V, K> {
  const env = { ...process.env, ...testOptions.env };
  const options = optionsUnderTest(handler, testOptions.group, testOptions.env === undefined ? undefined : env);
  const topic = testOptions.topic ?? 'source';
  const remainingMs = testOptions.remainingMs ?? 60_000;
  const maxRounds = testOptions.maxRounds ?? 100;
  const declared = testOptions.outputs === undefined ? (testOptions.env === undefined ? undefined : declaredOutputs(env)) : new Set(testOptions.outputs);
  // The engine's clock: it stands still while records run and jumps when retries come due, so delays and `at`s are exact.
  let clock = testOptions.now ?? Date.now();
  const now = (): number => clock;

  const runs: Array<TestRun<V, K>> = [];
  const retries: TestRetry[] = [];
  const deadLetters: TestDeadLetter[] = [];
  const outputs: TestOutput[] = [];
  const steps: TestStep[] = [];
  /** Retry copies not delivered yet, with what the test shows of them. */
  let pending: Array<{ item: HandOffItem; shown: TestRetry }> = [];
  /** The lane of every source record delivered, by origin. */
  const lanes = new Map<string, string | undefined>();
  /** The lane key (text) of every lane delivered to, by lane id: a hashed long key's lane shows its key too. */
  const laneKeys = new Map<string, string | null>();
  const keyOfLane = (lane: string): string | null => {
    if (lane === PARTITION_LANE || lane === NULL_KEY_LANE) return null;
    return laneKeys.get(lane) ?? (lane.startsWith('#') ? null : Buffer.from(lane, 'base64').toString('utf8'));
  };
  /** The next offset of each source partition and of each retry tier (partition 0). */
  const nextOffsets = new Map<string, number>();
  /** Runs in flight, per lane, and what broke the order. */
  const running = new Map<string, number>();
  const overlaps: string[] = [];

  const serializer = options.steps.serializer ?? { deserialize: (stored: string): unknown => JSON.parse(stored) };
  const effects = new NotedEffects((at, name, value) => {
    steps.push({ origin: { topic: at.ref.topic, partition: at.ref.partition, offset: at.offset }, name, value: serializer.deserialize(value) });
  });
  const store = new CompletionModelStore(options.caps.maxWindow);
  const sink: HandOffSink = {
    write: async (items: readonly HandOffItem[]): Promise<HandOffOutcome[]> => {
      const at = now();
      for (const item of items) {
        const origin = { topic: item.origin.topic, partition: item.origin.partition, offset: item.origin.offset ?? -1 };
        const key = text(item.record.key);
        if (item.kind === 'retry') {
          const shown: TestRetry = {
            origin, key, topic: item.topic, attempt: item.attempt, dueAt: item.dueAtMs, delayMs: Math.max(0, item.dueAtMs - at),
            ...(item.error === undefined ? {} : { error: { name: item.error.name, message: item.error.message } }), deferred: item.deferred === true,
          };
          retries.push(shown);
          pending.push({ item, shown });
        } else {
          deadLetters.push({
            origin, key, value: readValue(item.record.value), rawValue: item.record.value, topic: item.topic,
            reason: item.reason as DeadLetterReason, attempts: item.attempt,
            ...(item.error === undefined ? {} : { error: { name: item.error.name, message: item.error.message } }),
          });
        }
      }
      return items.map(() => ({ status: 'written' }));
    },
    send: (records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> => sendDeclared(declared, records, async (declaredOnes) => {
      for (const message of declaredOnes.flat()) {
        const headers = Object.fromEntries(Object.entries(message.headers).map(([name, value]) => [name, text(value)!]));
        const origin = parseOutputId(headers[OUTPUT_HEADER] ?? '')?.origin ?? { topic: '', partition: Number.NaN, offset: Number.NaN };
        const rawValue = bytesOf(message.value);
        outputs.push({
          topic: message.topic, key: text(message.key), value: readValue(rawValue), rawValue, headers,
          ...(message.partition === undefined ? {} : { partition: message.partition }),
          origin,
        });
      }
      return declaredOnes.map(() => undefined);
    }),
  };

  const recordHandler = handler.recordHandler as RecordHandler;
  const noted: RecordHandler = (record: LanesRecord, ctx: LanesContext) => {
    const { origin } = record;
    const lane = lanes.get(originId(origin));
    const laneId = lane === undefined ? undefined : `${origin.topic}\n${origin.partition}\n${lane}`;
    if (laneId !== undefined) {
      if ((running.get(laneId) ?? 0) > 0) overlaps.push(`${describeLane(origin, lane!)}: offset ${origin.offset} started while an earlier run of the lane was still running`);
      running.set(laneId, (running.get(laneId) ?? 0) + 1);
    }
    const noteRun: Mutable<TestRun<V, K>> = {
      topic: origin.topic, partition: origin.partition, offset: origin.offset, key: text(record.rawKey), value: record.value as V,
      attempt: ctx.attempt, at: now(), idempotencyKey: ctx.idempotencyKey, status: 'running', record: record as LanesRecord<V, K>,
    };
    runs.push(noteRun);
    const settled = (error?: { error: unknown }): void => {
      if (laneId !== undefined) running.set(laneId, running.get(laneId)! - 1);
      noteRun.status = error === undefined ? 'succeeded' : 'failed';
      if (error !== undefined) noteRun.error = error.error;
    };
    let result: unknown;
    try {
      result = recordHandler(record, ctx);
    } catch (error) {
      settled({ error });
      throw error;
    }
    if (!isPromiseLike(result)) {
      settled();
      return result;
    }
    return Promise.resolve(result).then((value) => {
      settled();
      return value;
    }, (error: unknown) => {
      settled({ error });
      throw error;
    });
  };

  const logger = new Logger({ serviceName: logServiceName(env), persistentKeys: { group: options.group }, logLevel: testOptions.logLevel ?? 'SILENT' });
  const metrics = new DroppedMetrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes' });
  const core = new LanesCore({ options, handler: noted, store, effects, handOff: () => sink, telemetry: { logger, metrics }, now });
  let invocations = 0;
  const invoke = (records: readonly KafkaRecordInput[]): Promise<KafkaBatchResponse> => {
    const end = Date.now() + remainingMs;
    const getRemainingTimeInMillis = (): number => end - Date.now();
    const event = encodeKafkaEvent({ source: 'SelfManagedKafka', records });
    const engine = (given: unknown): Promise<KafkaBatchResponse> => core.process(given, { getRemainingTimeInMillis });
    // The handler `lanes()` returned runs its middlewares (`.use()`) around each invocation, as on Lambda.
    if (typeof handler !== 'function') return engine(event);
    invocations += 1;
    return (handler as unknown as (event: unknown, context: Context) => Promise<KafkaBatchResponse>)(event, testContext(options.group, invocations, getRemainingTimeInMillis, engine));
  };

  const takeOffset = (id: string, given?: number): number => {
    const offset = given ?? nextOffsets.get(id) ?? 0;
    nextOffsets.set(id, Math.max(nextOffsets.get(id) ?? 0, offset + 1));
    return offset;
  };

  const deliver = async (input: TestRecord | readonly TestRecord[]): Promise<KafkaBatchResponse> => {
    const list: readonly TestRecord[] = Array.isArray(input) ? input : [input as TestRecord];
    const records: KafkaRecordInput[] = list.map((record) => {
      const recordTopic = record.topic ?? topic;
      const partition = record.partition ?? 0;
      return {
        topic: recordTopic, partition, offset: takeOffset(`${recordTopic}\n${partition}`, record.offset), timestamp: record.timestamp ?? now(),
        key: bytesOf(record.key), value: valueBytes(record.value),
        headers: Object.entries(record.headers ?? {}).map(([name, value]) => ({ name, value: bytesOf(value)! })),
      };
    });
    for (const batch of decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records })).partitions) {
      for (const record of batch.records) {
        const lane = laneIdOf(record, options);
        lanes.set(originId(record), lane);
        if (lane !== undefined && !laneKeys.has(lane)) laneKeys.set(lane, laneKeyText(record, options));
      }
    }
    return invoke(records);
  };

  /** Delivers the pending copies due now, one invocation per tier (in the order of the tiers' delays). */
  const deliverDue = async (): Promise<boolean> => {
    const at = now();
    const due = pending.filter((copy) => copy.item.dueAtMs <= at);
    if (due.length === 0) return false;
    pending = pending.filter((copy) => copy.item.dueAtMs > at);
    const tiers = [...new Set(due.map((copy) => copy.item.topic))].sort((a, b) => options.retry.tiers.findIndex((t) => a.endsWith(`.${t}`)) - options.retry.tiers.findIndex((t) => b.endsWith(`.${t}`)));
    for (const tier of tiers) {
      const copies = due.filter((copy) => copy.item.topic === tier).map((copy) => copyRecord(copy.item, takeOffset(`${tier}\n0`), now()));
      await invoke(copies);
    }
    return true;
  };

  let rounds = 0;
  const roundLimit = (): void => {
    rounds += 1;
    if (rounds > maxRounds) {
      throw new Error(
        `retries never settle: ${maxRounds} retry invocations played and ${pending.length} cop${pending.length === 1 ? 'y' : 'ies'} still pending ` +
          `(first: ${pending[0]?.shown.origin.topic}-${pending[0]?.shown.origin.partition}@${pending[0]?.shown.origin.offset}, attempt ${pending[0]?.shown.attempt}); raise \`maxRounds\``,
      );
    }
  };

  const settle = async (): Promise<void> => {
    rounds = 0;
    while (pending.length > 0) {
      roundLimit();
      const earliest = Math.min(...pending.map((copy) => copy.item.dueAtMs));
      if (earliest > clock) clock = earliest;
      await deliverDue();
    }
  };

  const advance = async (ms: number): Promise<void> => {
    if (!(ms >= 0)) throw new RangeError(`Expected \`ms\` to be a non-negative number, got ${ms}`);
    clock += ms;
    rounds = 0;
    while (await deliverDue()) roundLimit();
  };

  const describeLane = (o: { topic: string; partition: number }, lane: string): string => {
    const key = keyOfLane(lane);
    return `${o.topic}-${o.partition} ${key === null ? (lane === PARTITION_LANE ? 'partition lane' : `lane ${lane}`) : `key \`${key}\``}`;
  };

  const held = (): TestHeldLane[] => {
    const found: TestHeldLane[] = [];
    for (const [id, partition] of store.partitions) {
      const [, heldTopic = '', heldPartition = '0'] = id.split('\n');
      for (const [lane, head] of partition.lanes) {
        if (head.state !== 'held') continue;
        const parked = (partition.park.get(lane) ?? []).filter((record) => record.offset !== head.offset).length;
        found.push({ topic: heldTopic, partition: Number(heldPartition), key: keyOfLane(lane), lane, offset: head.offset, reason: head.reason, parked });
      }
    }
    return found;
  };

  // The engine's own derivation (a long key hashed as the engine hashes it), from the lane key as given: with
  // `keyOf`, the key it returns (a customer id), not the Kafka key.
  const laneOfKey = (key: string | null): string | undefined => {
    if (options.ordering === 'partition') return PARTITION_LANE;
    const record = { key: key === null ? null : Buffer.from(key, 'utf8') } as KafkaRecord;
    return laneIdOf(record, { ordering: options.ordering, nullKey: options.nullKey });
  };

  return {
    options,
    deliver,
    async run(records) {
      await deliver(records);
      await settle();
    },
    settle,
    advance,
    now,
    async release(key, where = {}) {
      const lane = laneOfKey(key);
      if (lane === undefined) throw new Error('Expected the key of a lane: records without a key have none (unless `nullKey: \'shared\'`)');
      const ref = { group: options.group, topic: where.topic ?? topic, partition: where.partition ?? 0 };
      await releaseHeldLane({ options, store, sink, now }, ref, lane);
      await settle();
    },
    runs,
    retries,
    get pending() {
      return pending.map((copy) => copy.shown);
    },
    deadLetters,
    outputs,
    outputsTo: <T>(outputTopic: string) => outputs.filter((output) => output.topic === outputTopic) as ReadonlyArray<TestOutput<T>>,
    steps,
    get held() {
      return held();
    },
    order(key, where = {}) {
      const orderTopic = where.topic ?? topic;
      const partition = where.partition ?? 0;
      return runs.filter((run) => run.key === key && run.topic === orderTopic && run.partition === partition).map((run) => run.offset);
    },
    assertOrder() {
      if (options.ordering === 'unordered') throw new Error('`ordering: \'unordered\'` promises no order to assert');
      const problems = [...overlaps];
      const last = new Map<string, number>();
      for (const run of runs) {
        const lane = lanes.get(originId(run));
        if (lane === undefined) continue;
        const id = `${run.topic}\n${run.partition}\n${lane}`;
        const before = last.get(id);
        if (before !== undefined && run.offset < before) problems.push(`${describeLane(run, lane)}: offset ${run.offset} started after offset ${before}`);
        last.set(id, run.offset);
      }
      if (problems.length > 0) throw new Error(`runs out of order (ordering: '${options.ordering}'):\n${problems.join('\n')}`);
    },
  };
}
