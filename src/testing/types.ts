/** What a test of a handler gives (records, options) and sees (runs, retries, dead letters, outputs, steps). */
import type { LanesRecord } from '../engine/types';
import type { KafkaBatchResponse, RecordCoordinates } from '../event';
import type { DeadLetterReason } from '../lanes/outcome';
import type { LanesOptions } from '../options/lanes-options';

/** A record to deliver. Everything but `value` has a default; `offset` defaults to the partition's next one. */
export interface TestRecord {
  /** A string (UTF-8), bytes, or `null` (no key). Default `null`. */
  readonly key?: string | Uint8Array | null;
  /**
   * A string (UTF-8) or bytes as they are, `null` (a tombstone), anything else as JSON. Default `null`. For a value
   * declared `avro()`, `protobuf()` or `jsonSchema()`: bytes are the wire format (frame and payload, read through the
   * registry); anything else is the decoded value, delivered as the trigger's schema registry integration delivers
   * it in JSON mode (JSON text marked by the `lanes-esm-decoded` header), read without a registry. The same for `key`.
   */
  readonly value?: unknown;
  readonly headers?: Readonly<Record<string, string | Uint8Array>>;
  /** Default: the `topic` of `testLanes`. */
  readonly topic?: string;
  /** Default 0. */
  readonly partition?: number;
  /** Default: one past the highest offset delivered on the partition so far (0 first). */
  readonly offset?: number;
  /** Epoch ms; default: the test's clock. */
  readonly timestamp?: number;
}

export interface TestLanesOptions {
  /** The source topic records are delivered on when they name none. Default `source`. */
  readonly topic?: string;
  /**
   * The consumer group, as `kafkaLanes.group` gives it to the deployed function (`KAFKA_LANES_GROUP`): a handler
   * module whose group comes from the environment imports normally in a test, and runs here under this group.
   * Default: the handler's own (its `group` option, else `KAFKA_LANES_GROUP`).
   */
  readonly group?: string;
  /**
   * Environment variables the handler's options are resolved with, over `process.env`: what the plugin sets on
   * the deployed function (`KAFKA_LANES_RETRY_TIERS`, `KAFKA_LANES_DEAD_LETTER_POLICY`, `KAFKA_LANES_OUTPUTS`, ...).
   * Default: none beyond `process.env`.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Where the test's clock starts (epoch ms). Default: now. It is the engine's clock (due times, `ctx.deadline`, the
   * `at` of a run): it stands still while records run and moves only when retries come due or `advance` moves it.
   * Timers stay real: `recordTimeoutMs` and the handler's own waits take real time.
   */
  readonly now?: number;
  /** How long each invocation has (Lambda's remaining time), in real ms. Default 60,000. */
  readonly remainingMs?: number;
  /**
   * The output topics declared in `kafkaLanes.outputs`: `ctx.send` to another fails the record, as the deployed
   * function does, with an error naming `kafkaLanes.outputs`. Default: `KAFKA_LANES_OUTPUTS` of `env` when given, else
   * the `outputs` of the service's `kafkaLanes` block of the test's group (`service`), else any topic (said once on the
   * console at the first send).
   */
  readonly outputs?: readonly string[];
  /**
   * The service's serverless.yml (a path from the working directory), whose `kafkaLanes` block of the test's group
   * (`group`, else the handler's own, else the only block) gives the handler what the plugin gives the deployed
   * function: its group, `retryTiers`, `deadLetter.policy`, `ordering` and `outputs`; `env` and `outputs` given here
   * win. The file's variables (`${param:...}`) are not resolved: give such a setting here. `false`: read none.
   * Default: `serverless.yml` (or `.yaml`, `.json`) of the working directory, when there is one.
   */
  readonly service?: string | false;
  /** The level of the handler's `ctx.logger` and of the framework's logs. Default `SILENT`. */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** Retry invocations `settle()` plays at most before it gives up (a handler that never stops failing). Default 100. */
  readonly maxRounds?: number;
}

/** Where a record was first read: its source topic, partition and offset. */
export type TestOrigin = RecordCoordinates;

/** One run of the handler, in start order. */
export interface TestRun<V = unknown, K = unknown> {
  /** The source topic, partition and offset of the record (a retry's too). */
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** The Kafka key as text (UTF-8), `null` for none. */
  readonly key: string | null;
  /** The value as the handler got it (deserialized, through the schema). */
  readonly value: V;
  /** 1 for the first run, then 2, 3... for retries (`ctx.attempt`). */
  readonly attempt: number;
  /** The test clock when the run started (epoch ms): a retry's shows its delay. */
  readonly at: number;
  readonly idempotencyKey: string;
  /** `running` until the handler settles; `failed` when it threw (or its promise rejected). */
  readonly status: 'running' | 'succeeded' | 'failed';
  /** What the handler threw, when it failed. */
  readonly error?: unknown;
  /** The whole record the handler got (`record.topic` is the retry topic on a retry). */
  readonly record: LanesRecord<V, K>;
}

/** An error as a copy carries it: its class (`lanes-error-class`) and its message. */
export interface TestError {
  readonly name: string;
  readonly message: string;
}

/** A record written to a retry tier: it runs again when due. */
export interface TestRetry {
  readonly origin: TestOrigin;
  readonly key: string | null;
  /** The retry tier's topic, `<group>.retry.<tier>`. */
  readonly topic: string;
  /** The attempt it runs as. */
  readonly attempt: number;
  /** When it is due (epoch ms, test clock), and how long after it was written. */
  readonly dueAt: number;
  readonly delayMs: number;
  /** The error of the failed run; absent for a record handed on without a run (`deferred`). */
  readonly error?: TestError;
  /** Handed on without being run: a lane's next record after its head was dead-lettered, or the deadline came. */
  readonly deferred: boolean;
}

/** What the retries of a test would cost on AWS (`LanesTest.retryTime`). */
export interface TestRetryTime {
  /** Retry copies delivered to the retry function. */
  readonly copies: number;
  /** Rounds of the retry function run (each an invocation, billed), in real time: what Lambda would bill for them. */
  readonly rounds: number;
  readonly billedMs: number;
  /** On the test clock: how long the copies delivered waited between their write and their run, billing nothing. */
  readonly suspendedMs: number;
}

/** A record written to the dead-letter topic. */
export interface TestDeadLetter {
  readonly origin: TestOrigin;
  readonly key: string | null;
  /** The value parsed as JSON when it is JSON, else its text; `null` for none. */
  readonly value: unknown;
  readonly rawValue: Buffer | null;
  /** `<group>.dlq`. */
  readonly topic: string;
  /** `attempts-exhausted`, `non-retriable`, `programming-error`, `schema-validation`, `deserialization`... */
  readonly reason: DeadLetterReason;
  /** The error of the last run: `error.name` is the class a dead letter's `lanes-error-class` header carries. */
  readonly error?: TestError;
  /** The number of the last run (0: never ran, e.g. a value the schema refused). */
  readonly attempts: number;
}

/** A record produced by `ctx.send`, once its handler succeeded; `T` is its value's type (`outputsTo<T>(topic)`). */
export interface TestOutput<T = unknown> {
  readonly topic: string;
  readonly key: string | null;
  /** Parsed as JSON when it is JSON (what `ctx.send` does with an object), else the text; `null` for none. */
  readonly value: T;
  readonly rawValue: Buffer | null;
  /** Its own headers and the `lanes-output` one, as text. */
  readonly headers: Readonly<Record<string, string>>;
  readonly partition?: number;
  /** The record whose handler sent it. */
  readonly origin: TestOrigin;
}

/** A step result stored (its function ran and succeeded); a run that finds it stored does not appear again. */
export interface TestStep {
  readonly origin: TestOrigin;
  readonly name: string;
  /** The result as a later run reads it back (through the step serializer). */
  readonly value: unknown;
}

/** A lane the `hold` dead-letter policy keeps blocked on its dead-lettered head. */
export interface TestHeldLane {
  readonly topic: string;
  readonly partition: number;
  /**
   * The lane key as text (what `keyOf` returns, else the record key), also for a long key whose lane id is hashed;
   * `null` for the lane of a whole partition (`ordering: 'partition'`) or of null keys.
   */
  readonly key: string | null;
  readonly lane: string;
  /** The dead-lettered head's offset, and why. */
  readonly offset: number;
  readonly reason: string;
  /** Records of the lane waiting behind it. */
  readonly parked: number;
}

/** A handler under test: deliver records, then look at what happened. Every list grows over the test. */
export interface LanesTest<V = unknown, K = unknown> {
  /** The options as `lanes()` resolved them. */
  readonly options: LanesOptions;
  /** Delivers `records` (one invocation of the function, as the source trigger does), then `settle()`s. */
  run(records: TestRecord | readonly TestRecord[]): Promise<void>;
  /** One invocation of the function on `records`, as the source trigger does; retries stay pending. */
  deliver(records: TestRecord | readonly TestRecord[]): Promise<KafkaBatchResponse>;
  /**
   * Runs every pending retry: the clock jumps to the earliest due time, the copies due then are delivered to the
   * retry function (one invocation per tier), and so on until none is left.
   *
   * @throws Error after `maxRounds` invocations with copies still pending.
   */
  settle(): Promise<void>;
  /** Moves the clock `ms` forward and runs the retries due by then. */
  advance(ms: number): Promise<void>;
  /** The test clock (epoch ms): what the engine takes as now. */
  now(): number;
  /**
   * `kafka-lanes lane release` of a held lane (`hold` policy): its head is skipped, its next records run (settled).
   * `key` is the lane key: the record key, or what `keyOf` returns; its lane id is derived as the engine derives it
   * (a key whose base64 is over 128 characters is hashed).
   */
  release(key: string | null, where?: { readonly topic?: string; readonly partition?: number }): Promise<void>;
  /** Every handler run, in start order. */
  readonly runs: ReadonlyArray<TestRun<V, K>>;
  /** Retry copies written, in write order. */
  readonly retries: readonly TestRetry[];
  /** Retry copies written and not yet run (`settle()` runs them). */
  readonly pending: readonly TestRetry[];
  /**
   * What the retries so far would cost on AWS, where a copy waits for its due time suspended (a durable execution
   * billing nothing while it waits) and only the retry function's rounds are billed: their run time, and the time the
   * copies waited.
   */
  readonly retryTime: TestRetryTime;
  readonly deadLetters: readonly TestDeadLetter[];
  readonly outputs: readonly TestOutput[];
  /**
   * The outputs sent to `topic`, in send order, their values typed `T` (what the handler sends there; not checked).
   *
   * @example
   * t.outputsTo<{ orderId: string; paymentId: string }>('orders-paid')[0]?.value.paymentId;
   */
  outputsTo<T = unknown>(topic: string): ReadonlyArray<TestOutput<T>>;
  readonly steps: readonly TestStep[];
  /** Lanes held by the `hold` dead-letter policy now. */
  readonly held: readonly TestHeldLane[];
  /** The offsets of `key`'s handler runs (of `topic` partition 0 unless given), in start order; a retry repeats its offset. */
  order(key: string | null, where?: { readonly topic?: string; readonly partition?: number }): number[];
  /**
   * Checks the order `options.ordering` promises over every run so far: within a lane (a key of a partition, or
   * the whole partition), runs started in offset order and never two at once.
   *
   * @throws Error naming each lane whose runs broke it; also for `ordering: 'unordered'`, which promises none.
   */
  assertOrder(): void;
}
