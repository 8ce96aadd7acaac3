/** What `testLanes` returns: the handler's own engine on the in-memory models, with a clock the test moves. */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import type { InvocationContext } from '../engine/run-scope';
import type { RecordHandler } from '../engine/types';
import { decodeKafkaEvent, encodeKafkaEvent, type KafkaBatchResponse, type KafkaRecordInput } from '../event';
import { declaredOutputs } from '../handler/declared-outputs';
import { LanesCore } from '../handler/lanes-core';
import { RESOLVE_OPTIONS, TEST_ENGINE, type LanesHandler } from '../handler/lanes';
import type { LanesOptions } from '../options/lanes-options';
import { releaseHeldLane } from '../operations/lanes';
import { ENV } from '../options/constants';
import { logServiceName } from '../telemetry';
import { CompletionModelStore } from './completion-model';
import { HandOffRecorder } from './hand-off-recorder';
import { outputsNotice } from './outputs-notice';
import { DroppedMetrics, NotedEffects, bytesOf, valueBytes } from './recorders';
import { copyRecord } from './retry-copies';
import { ESM_DECODED_HEADER, isRegistryDeserializer } from '../registry/types';
import { retryExecutionTimeoutMs, suspendLoop } from '../retry/suspend-loop';
import { RunRecorder } from './run-recorder';
import { testDeclaration } from './service-file';
import type { LanesTest, TestDeadLetter, TestHeldLane, TestLanesOptions, TestOutput, TestRecord, TestRetry, TestRetryTime, TestRun, TestStep } from './types';

/** What `testLanes` runs: the handler `lanes()` returns (with any `.use()`d middlewares), or its options and record function. */
export type TestedHandler<V, K> = Pick<LanesHandler<V, K>, 'options' | 'recordHandler'> & Partial<Pick<LanesHandler<V, K>, typeof RESOLVE_OPTIONS>>;

type Where = { readonly topic?: string; readonly partition?: number };

/** The handler's options, resolved again when the test gives a group or an environment. */
function optionsUnderTest<V, K>(handler: TestedHandler<V, K>, group: string | undefined, env: NodeJS.ProcessEnv | undefined): LanesOptions {
  const resolve = handler[RESOLVE_OPTIONS];
  if (group === undefined && env === undefined) return handler.options;
  if (resolve !== undefined) return resolve(env ?? process.env, group);
  // Options and a record function put together by hand: the group given replaces theirs.
  return group === undefined ? handler.options : { ...handler.options, group };
}

/** The handler's own group (its `group` option, else `KAFKA_LANES_GROUP`), if it has one. */
/** A decoded value as JSON text, a string included (`"c-1"`), as a trigger in JSON mode delivers it. */
const jsonBytes = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

function ownGroup<V, K>(handler: TestedHandler<V, K>): string | undefined {
  try {
    return handler.options.group;
  } catch {
    return undefined;
  }
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

/**
 * A handler under test (`LanesTest`). Its methods are bound, so `const { run } = testLanes(handler)` works too.
 *
 * @example
 * const t = new LanesUnderTest(handler, { topic: 'orders' });
 * await t.run([{ key: 'c-1', value: order }]);
 */
export class LanesUnderTest<V, K> implements LanesTest<V, K> {
  readonly options: LanesOptions;
  readonly runs: ReadonlyArray<TestRun<V, K>>;
  readonly retries: readonly TestRetry[];
  readonly deadLetters: readonly TestDeadLetter[];
  readonly outputs: readonly TestOutput[];
  readonly steps: TestStep[] = [];
  readonly #handler: TestedHandler<V, K>;
  readonly #topic: string;
  readonly #remainingMs: number;
  readonly #maxRounds: number;
  /** The retry function's durable execution timeout, as the deployed function reads it. */
  readonly #executionTimeoutMs: number;
  readonly #store: CompletionModelStore;
  readonly #sink: HandOffRecorder;
  readonly #recorder: RunRecorder<V, K>;
  readonly #core: LanesCore;
  /** The engine's clock: it stands still while records run and jumps when retries come due, so delays and `at`s are exact. */
  #clock: number;
  #invocations = 0;
  #retryTime: TestRetryTime = { copies: 0, rounds: 0, billedMs: 0, suspendedMs: 0 };
  #rounds = 0;
  /** The next offset of each source partition and of each retry tier (partition 0). */
  readonly #nextOffsets = new Map<string, number>();

  constructor(handler: TestedHandler<V, K>, testOptions: TestLanesOptions = {}) {
    // The service's serverless.yml declares what the plugin gives the function (outputs, tiers...); the test's own win.
    const given = new Set([...Object.keys(testOptions.env ?? {}), ...(testOptions.outputs === undefined ? [] : [ENV.outputs])]);
    const service = testDeclaration(testOptions, () => ownGroup(handler), given);
    const env = { ...process.env, ...(service.found ? service.env : {}), ...testOptions.env };
    const resolved = testOptions.env !== undefined || service.found;
    // Outputs are recorded as `ctx.send` was given them: a registry format's value is not encoded (no registry is asked).
    const { outputFormats: _encodedOnDeploy, ...options } = optionsUnderTest(handler, testOptions.group ?? (service.found ? service.env[ENV.group] : undefined), resolved ? env : undefined);
    this.options = options;
    this.#handler = handler;
    this.#topic = testOptions.topic ?? 'source';
    this.#remainingMs = testOptions.remainingMs ?? 60_000;
    this.#maxRounds = testOptions.maxRounds ?? 100;
    this.#executionTimeoutMs = retryExecutionTimeoutMs(env);
    this.#clock = testOptions.now ?? Date.now();
    const declared = testOptions.outputs === undefined ? (resolved ? declaredOutputs(env) : undefined) : new Set(testOptions.outputs);
    this.#sink = new HandOffRecorder(this.now, declared, outputsNotice(options.group, service.found ? undefined : service.why));
    this.#recorder = new RunRecorder<V, K>(options, handler.recordHandler as RecordHandler, this.now);
    this.#store = new CompletionModelStore(options.caps.maxWindow);
    this.runs = this.#recorder.runs;
    this.retries = this.#sink.retries;
    this.deadLetters = this.#sink.deadLetters;
    this.outputs = this.#sink.outputs;
    const serializer = options.steps.serializer ?? { deserialize: (stored: string): unknown => JSON.parse(stored) };
    const effects = new NotedEffects((at, name, value) => {
      this.steps.push({ origin: { topic: at.ref.topic, partition: at.ref.partition, offset: at.offset }, name, value: serializer.deserialize(value) });
    });
    const logger = new Logger({ serviceName: logServiceName(env), persistentKeys: { group: options.group }, logLevel: testOptions.logLevel ?? 'SILENT' });
    const metrics = new DroppedMetrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes' });
    this.#core = new LanesCore({ options, handler: this.#recorder.noted, store: this.#store, effects, handOff: () => this.#sink, telemetry: { logger, metrics }, now: this.now });
  }

  readonly now = (): number => this.#clock;

  readonly deliver = async (input: TestRecord | readonly TestRecord[]): Promise<KafkaBatchResponse> => {
    const list: readonly TestRecord[] = Array.isArray(input) ? input : [input as TestRecord];
    const records: KafkaRecordInput[] = list.map((record) => {
      const topic = record.topic ?? this.#topic;
      const partition = record.partition ?? 0;
      const decoded = this.#decodedParts(record);
      return {
        topic, partition, offset: this.#takeOffset(`${topic}\n${partition}`, record.offset), timestamp: record.timestamp ?? this.now(),
        key: decoded.includes('key') ? jsonBytes(record.key) : bytesOf(record.key),
        value: decoded.includes('value') ? jsonBytes(record.value) : valueBytes(record.value),
        headers: [
          ...Object.entries(record.headers ?? {}).map(([name, value]) => ({ name, value: bytesOf(value)! })),
          ...(decoded.length === 0 ? [] : [{ name: ESM_DECODED_HEADER, value: Buffer.from(decoded.join(',')) }]),
        ],
      };
    });
    for (const batch of decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records })).partitions) {
      for (const record of batch.records) this.#recorder.delivered(record);
    }
    return this.#invoke(records);
  };

  /**
   * The parts of `record` given decoded for a registry format (`avro()`, `protobuf()`, `jsonSchema()`): anything but
   * bytes. They are delivered as a trigger with the schema registry integration in JSON mode delivers them, JSON text
   * marked `lanes-esm-decoded`, which the format reads without a registry; bytes go as they are, frame and all.
   */
  #decodedParts(record: TestRecord): Array<'key' | 'value'> {
    return (['key', 'value'] as const).filter((part) => {
      const given = record[part];
      return isRegistryDeserializer(this.options[part]) && given !== null && given !== undefined && !(given instanceof Uint8Array);
    });
  }

  readonly run = async (records: TestRecord | readonly TestRecord[]): Promise<void> => {
    await this.deliver(records);
    await this.settle();
  };

  readonly settle = async (): Promise<void> => {
    this.#rounds = 0;
    while (this.#sink.pending.length > 0) {
      this.#roundLimit();
      const earliest = Math.min(...this.#sink.pending.map((copy) => copy.item.dueAtMs));
      if (earliest > this.#clock) this.#clock = earliest;
      await this.#deliverDue();
    }
  };

  readonly advance = async (ms: number): Promise<void> => {
    if (!(ms >= 0)) throw new RangeError(`Expected \`ms\` to be a non-negative number, got ${ms}`);
    this.#clock += ms;
    this.#rounds = 0;
    while (await this.#deliverDue()) this.#roundLimit();
  };

  readonly release = async (key: string | null, where: Where = {}): Promise<void> => {
    const lane = this.#recorder.laneOfKey(key);
    if (lane === undefined) throw new Error('Expected the key of a lane: records without a key have none (unless `nullKey: \'shared\'`)');
    const ref = { group: this.options.group, topic: where.topic ?? this.#topic, partition: where.partition ?? 0 };
    await releaseHeldLane({ options: this.options, store: this.#store, sink: this.#sink, now: this.now }, ref, lane);
    await this.settle();
  };

  get retryTime(): TestRetryTime {
    return this.#retryTime;
  }

  get pending(): readonly TestRetry[] {
    return this.#sink.pending.map((copy) => copy.shown);
  }

  readonly outputsTo = <T>(topic: string): ReadonlyArray<TestOutput<T>> => this.outputs.filter((output) => output.topic === topic) as ReadonlyArray<TestOutput<T>>;

  get held(): readonly TestHeldLane[] {
    const found: TestHeldLane[] = [];
    for (const [id, partition] of this.#store.partitions) {
      const [, topic = '', heldPartition = '0'] = id.split('\n');
      for (const [lane, head] of partition.lanes) {
        if (head.state !== 'held') continue;
        const parked = (partition.park.get(lane) ?? []).filter((record) => record.offset !== head.offset).length;
        found.push({ topic, partition: Number(heldPartition), key: this.#recorder.keyOfLane(lane), lane, offset: head.offset, reason: head.reason, parked });
      }
    }
    return found;
  }

  readonly order = (key: string | null, where: Where = {}): number[] => this.#recorder.order(key, where.topic ?? this.#topic, where.partition ?? 0);

  readonly assertOrder = (): void => this.#recorder.assertOrder();

  /** One invocation of the function on `records`, through the handler's middy chain when it has one. */
  #invoke(records: readonly KafkaRecordInput[]): Promise<KafkaBatchResponse> {
    return this.#invokeWith(records, (given, context) => this.#core.process(given, context));
  }

  /** One invocation running `engine` (the function on the test's models), through the handler's middy chain when it has one. */
  #invokeWith<R>(records: readonly KafkaRecordInput[], engine: (event: unknown, context: InvocationContext) => Promise<R>): Promise<R> {
    const end = Date.now() + this.#remainingMs;
    const getRemainingTimeInMillis = (): number => end - Date.now();
    const event = encodeKafkaEvent({ source: 'SelfManagedKafka', records });
    const run = (given: unknown): Promise<R> => engine(given, { getRemainingTimeInMillis });
    // The handler `lanes()` returned runs its middlewares (`.use()`) around each invocation, as on Lambda.
    if (typeof this.#handler !== 'function') return run(event);
    this.#invocations += 1;
    const lambda = this.#handler as unknown as (event: unknown, context: Context) => Promise<R>;
    return lambda(event, testContext(this.options.group, this.#invocations, getRemainingTimeInMillis, run as (event: unknown) => Promise<never>));
  }

  /**
   * Retry copies delivered to the retry function as AWS runs them: a durable execution (`suspendLoop`) whose rounds run
   * in suspend mode, each billed its real run time. The copies come due (`settle`, `advance`), so the first round runs
   * them all; a wait would move the test clock.
   */
  async #execute(records: readonly KafkaRecordInput[]): Promise<void> {
    await suspendLoop({
      round: async (_index, execution) => {
        const started = performance.now();
        try {
          return await this.#invokeWith(records, (given, context) => this.#core.round(given, context, execution));
        } finally {
          this.#retryTime = { ...this.#retryTime, rounds: this.#retryTime.rounds + 1, billedMs: this.#retryTime.billedMs + (performance.now() - started) };
        }
      },
      wait: async (_index, seconds) => {
        this.#clock += seconds * 1000;
        this.#retryTime = { ...this.#retryTime, suspendedMs: this.#retryTime.suspendedMs + seconds * 1000 };
      },
    }, { startedAtMs: this.now(), timeoutMs: this.#executionTimeoutMs });
  }

  #takeOffset(id: string, given?: number): number {
    const offset = given ?? this.#nextOffsets.get(id) ?? 0;
    this.#nextOffsets.set(id, Math.max(this.#nextOffsets.get(id) ?? 0, offset + 1));
    return offset;
  }

  /** Delivers the pending copies due now, one invocation per tier (in the order of the tiers' delays). */
  async #deliverDue(): Promise<boolean> {
    const due = this.#sink.takeDue(this.now());
    if (due.length === 0) return false;
    const tierIndex = (topic: string): number => this.options.retry.tiers.findIndex((tier) => topic.endsWith(`.${tier}`));
    const tiers = [...new Set(due.map((copy) => copy.item.topic))].sort((a, b) => tierIndex(a) - tierIndex(b));
    for (const tier of tiers) {
      const copies = due.filter((copy) => copy.item.topic === tier);
      this.#retryTime = {
        ...this.#retryTime,
        copies: this.#retryTime.copies + copies.length,
        suspendedMs: this.#retryTime.suspendedMs + copies.reduce((sum, copy) => sum + Math.max(0, this.now() - copy.writtenAt), 0),
      };
      await this.#execute(copies.map((copy) => copyRecord(copy.item, this.#takeOffset(`${tier}\n0`), this.now())));
    }
    return true;
  }

  #roundLimit(): void {
    this.#rounds += 1;
    if (this.#rounds <= this.#maxRounds) return;
    const pending = this.#sink.pending;
    const first = pending[0]?.shown;
    throw new Error(
      `retries never settle: ${this.#maxRounds} retry invocations played and ${pending.length} cop${pending.length === 1 ? 'y' : 'ies'} still pending ` +
        `(first: ${first?.origin.topic}-${first?.origin.partition}@${first?.origin.offset}, attempt ${first?.attempt}); raise \`maxRounds\``,
    );
  }
}
