import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { brokersId, kafkaClientConfig } from '../connections/kafka';
import { importKafkaJs } from '../connections/kafkajs';
import { kafkaLogCreator } from '../connections/kafka-log';
import { connectStore } from '../connections/redis';
import type { KafkaBatchResponse } from '../event';
import type { HandOffWriter } from '../handoff/writer';
import type { OutputWriter } from '../handoff/output-writer';
import { deadLetterTopic, ENV, resolveOptions, type LanesOptionsInput, type LanesOptions, type PartOutput } from '../options';
import type { LanesFunction, HandOffSink, RecordHandler } from './lanes-function';
import { importTelemetry } from '../telemetry';
import { declaredOutputs, sendDeclared } from './declared-outputs';
import { roundOf } from '../retry/execution-window';

/**
 * An invocation of a durable function: Lambda's durable execution envelope, which carries the event inside its state
 * (`@aws/durable-execution-sdk-js`'s `DurableExecutionInvocationInput`), not a Kafka event.
 */
function isDurableEnvelope(event: unknown): boolean {
  const envelope = event as { DurableExecutionArn?: unknown; CheckpointToken?: unknown } | null;
  return typeof envelope === 'object' && envelope !== null && typeof envelope.DurableExecutionArn === 'string' && typeof envelope.CheckpointToken === 'string';
}

/** The Kafka writers of one cluster: retry and dead-letter copies, and `ctx.send` outputs. */
interface Writers {
  readonly handOff: HandOffWriter;
  readonly outputs: OutputWriter;
}

/**
 * The hand-off writer, and kafkajs with it, is made at the first write: most invocations write nothing, so
 * neither is read nor evaluated at cold start. Both are `import()`s, a chunk of their own in an ESM bundle with
 * splitting (see `importKafkaJs`). One writer per cluster; concurrent first writes share it.
 */
function handOffFactory(options: LanesOptions, writers: Map<string, Promise<Writers>>, declared = declaredOutputs(process.env)): (bootstrapServers: readonly string[]) => HandOffSink {
  const makeWriter = async (bootstrapServers: readonly string[]): Promise<Writers> => {
    const [{ Kafka, logLevel }, { HandOffWriter, HAND_OFF_WRITER_DEFAULTS, producerRetry }, { OutputWriter }] = await Promise.all([
      importKafkaJs(),
      import('../handoff/writer'),
      import('../handoff/output-writer'),
    ]);
    const kafka = new Kafka({
      // Brokers, TLS and SASL (MSK IAM included) for every client the framework opens: src/connections.
      ...(await kafkaClientConfig(options.kafka, bootstrapServers)),
      logLevel: logLevel.ERROR,
      // A coordinator still loading (the first idempotent producer of a cluster) is a retried warning, not an ERROR.
      logCreator: kafkaLogCreator,
      // Bounded like the writer's own timeout, so an unreachable broker fails a batch in time and
      // an abandoned connect does not go on retrying in the background.
      retry: producerRetry(HAND_OFF_WRITER_DEFAULTS.timeoutMs),
      connectionTimeout: 3_000,
    });
    // The outputs of `ctx.send` get a producer of their own (made at their first send), on the same client.
    return {
      handOff: new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(options.group) }),
      outputs: new OutputWriter(kafka, HAND_OFF_WRITER_DEFAULTS.timeoutMs),
    };
  };
  const writerFor = (bootstrapServers: readonly string[]): Promise<Writers> => {
    const id = brokersId(options.kafka, bootstrapServers);
    let writer = writers.get(id);
    if (writer === undefined) {
      writer = makeWriter(bootstrapServers);
      writers.set(id, writer);
      // A writer that could not be made (no brokers known) is not kept: the next write tries again.
      writer.catch(() => writers.get(id) === writer && writers.delete(id));
    }
    return writer;
  };
  return (bootstrapServers) => ({
    write: async (items, writeOptions) => (await writerFor(bootstrapServers)).handOff.write(items, writeOptions),
    send: async (records, sendOptions) => {
      const { outputs } = await writerFor(bootstrapServers);
      return sendDeclared(declared, records, (declaredOnes) => outputs.send(declaredOnes, sendOptions));
    },
  });
}

/**
 * What the handler's `record.key` or `record.value` is for the options given: the schema's output, `string |
 * null` for `'string'`, `Buffer | null` for `'raw'`, a function's return type, `unknown` for JSON.
 */
export type RecordPartOf<O, Name extends 'key' | 'value'> = Name extends keyof O
  ? PartOutput<Exclude<O[Name], undefined>, Name extends 'key' ? string | null : unknown>
  : Name extends 'key' ? string | null : unknown;

/** What a middleware of a `lanes()` handler sees of one invocation: middy's request (one per batch, not per record). */
export interface LanesRequest {
  readonly event: unknown;
  readonly context: Context;
  response: KafkaBatchResponse | null | undefined;
  error: Error | undefined | null;
  internal: Record<string, unknown>;
}

/**
 * A middy middleware, as `@middy/core` 6 and 7 and Powertools (`injectLambdaContext`, `makeHandlerIdempotent`)
 * make them: what `.use()` takes. Its functions run once per invocation, around the whole batch.
 */
export interface LanesMiddleware {
  before?(request: LanesRequest): unknown;
  after?(request: LanesRequest): unknown;
  onError?(request: LanesRequest): unknown;
  readonly name?: string;
}

/**
 * What `lanes(...)` returns: the Lambda handler to export (a middy handler: add your own middlewares with
 * `.use()`, which returns the same handler, so it stays a `LanesHandler` that `kafka-lanes/testing` runs), with the
 * options resolved at cold start, the record handler it runs, and `close()`.
 *
 * @example
 * export const handler: LanesHandler<Order> = lanes({ value: order }, async (record) => save(record.value));
 */
export interface LanesHandler<V = unknown, K = string | null> {
  (event: unknown, context: Context): Promise<KafkaBatchResponse>;
  /** Adds middlewares (middy's `.use()`), run around every invocation in the order added. */
  use(middlewares: LanesMiddleware | readonly LanesMiddleware[]): LanesHandler<V, K>;
  before(fn: (request: LanesRequest) => unknown): LanesHandler<V, K>;
  after(fn: (request: LanesRequest) => unknown): LanesHandler<V, K>;
  onError(fn: (request: LanesRequest) => unknown): LanesHandler<V, K>;
  /**
   * The options as resolved and validated at cold start. Without a group (no `group` option, no
   * `KAFKA_LANES_GROUP`) reading them throws the `OptionsError` that names it, as the first invocation does.
   */
  readonly options: LanesOptions;
  /** The per-record function given to `lanes` (what `kafka-lanes/testing` runs). */
  readonly recordHandler: RecordHandler<V, K>;
  /** Closes the connections (Lambda never needs it; tests and the local emulator do). */
  close(): Promise<void>;
  /** The options given to `lanes`, resolved again with another environment (`kafka-lanes/testing`'s `group`, `env`). */
  readonly [RESOLVE_OPTIONS]: (env: NodeJS.ProcessEnv, group?: string) => LanesOptions;
}

/** Where a handler keeps its options' resolution; a registered symbol, so a second copy of the package finds it too. */
export const RESOLVE_OPTIONS: unique symbol = Symbol.for('kafka-lanes.resolveOptions') as never;

/**
 * Where `kafka-lanes/testing` puts its engine in the Lambda context it invokes a handler with: the handler's
 * middlewares run as on Lambda, and the batch runs on the test's in-memory engine instead of Redis and Kafka.
 */
export const TEST_ENGINE: unique symbol = Symbol.for('kafka-lanes.testEngine') as never;

/** A group that cannot be a Kafka group id a user picks by accident: it stands in while the real one is missing. */
const PENDING_GROUP = 'kafka-lanes.group-pending';

/**
 * The options, validated now. Only a missing group waits: every other problem throws here, at cold start. A
 * handler module must import where no group is set (a test gives it to `testLanes`, a script may never invoke it);
 * the first invocation, or reading `handler.options`, throws the missing group's `OptionsError` unless it is set by
 * then. On Lambda the plugin sets `KAFKA_LANES_GROUP`, so a deployed handler resolves everything at cold start.
 */
function optionsAtStart(input: LanesOptionsInput): () => LanesOptions {
  const groupMissing = input.group === undefined && (process.env[ENV.group] ?? '') === '';
  if (!groupMissing) {
    const options = resolveOptions(input);
    return () => options;
  }
  try {
    resolveOptions({ ...input, group: PENDING_GROUP });
  } catch {
    // Other problems too: report them all, the missing group with them.
    resolveOptions(input);
  }
  let resolved: LanesOptions | undefined;
  return () => (resolved ??= resolveOptions(input));
}

/**
 * A Kafka-triggered Lambda handler that runs `handler` once per record, concurrently, in the order asked
 * for (per key by default), with retry and dead-letter topics. Options are validated here, once, at cold
 * start; connections open on the first invocation and are reused. The result is a middy handler: add your
 * own middlewares with `.use()`.
 *
 * @example
 * export const handler = lanes(
 *   { group: 'orders', ordering: 'key', concurrency: 200, value: 'json', retry: { maxAttempts: 5 } },
 *   async (record, ctx) => {
 *     await saveOrder(record.value, { signal: ctx.signal });
 *   },
 * );
 *
 * // With a Standard Schema (zod here): `record.value` is typed `{ id: number }`; a record whose value does not
 * // match goes to the dead-letter topic with the issues, and its lane goes on.
 * export const typed = lanes({ value: z.object({ id: z.number() }) }, async (record) => {
 *   await saveOrder(record.value.id);
 * });
 */
export function lanes<O extends LanesOptionsInput, V = RecordPartOf<O, 'value'>, K = RecordPartOf<O, 'key'>>(
  input: O,
  handler: RecordHandler<V, K>,
): LanesHandler<V, K> {
  const optionsNow = optionsAtStart(input);
  const writers = new Map<string, Promise<Writers>>();
  let lanesFunction: Promise<LanesFunction> | undefined;
  // Made at the first invocation: the logger, the metrics and the Redis client (ioredis is loaded then, not at
  // cold start). Concurrent first invocations (the local emulator) share one.
  const makeFunction = async (): Promise<LanesFunction> => {
    const options = optionsNow();
    const [telemetry, { LanesFunction }] = await Promise.all([importTelemetry(options.group), import('./lanes-function')]);
    return new LanesFunction({
      options,
      handler: handler as RecordHandler,
      store: await connectStore(options, telemetry),
      handOff: handOffFactory(options, writers),
      telemetry,
    });
  };
  const functionNow = (): Promise<LanesFunction> => {
    if (lanesFunction === undefined) {
      lanesFunction = makeFunction();
      lanesFunction.catch(() => (lanesFunction = undefined));
    }
    return lanesFunction;
  };
  let durable: Promise<(event: unknown, context: Context) => Promise<unknown>> | undefined;
  const base = async (event: unknown, context: Context): Promise<KafkaBatchResponse> => {
    const testEngine = (context as Context & { [TEST_ENGINE]?: (event: unknown) => Promise<KafkaBatchResponse> })[TEST_ENGINE];
    if (testEngine !== undefined) return testEngine(event);
    if (isDurableEnvelope(event)) {
      // A durable retry function: the SDK is loaded at its first invocation, never by a handler that is not one.
      durable ??= import('./durable-execution').then(({ durableRetryHandler }) =>
        durableRetryHandler(async (kafkaEvent, lambdaContext, execution) => (await functionNow()).round(kafkaEvent, lambdaContext, execution)));
      // What Lambda's durable execution service reads (the execution's status and, at its end, the batch response).
      return (await durable)(event, context) as Promise<KafkaBatchResponse>;
    }
    // A round the offline trigger runs of its durable execution: its outcome goes back to the trigger, not to AWS.
    const round = roundOf(context);
    if (round !== undefined) return (await functionNow()).round(event, context, round) as unknown as Promise<KafkaBatchResponse>;
    return (await functionNow()).process(event, context);
  };
  const close = async (): Promise<void> => {
    const made = [...writers.values()];
    writers.clear();
    await Promise.all(made.map(async (writer) => {
      const made = await writer.catch(() => undefined);
      await Promise.all([made?.handOff.disconnect(), made?.outputs.disconnect()]);
    }));
    const current = lanesFunction;
    lanesFunction = undefined;
    await (await current?.catch(() => undefined))?.store.close();
  };
  const resolveWith = (env: NodeJS.ProcessEnv, group?: string): LanesOptions => resolveOptions(group === undefined ? input : { ...input, group }, env);
  const made = Object.assign(middy<unknown, KafkaBatchResponse, Error, Context>(base), { recordHandler: handler, close, [RESOLVE_OPTIONS]: resolveWith });
  // middy's `use`, `before`, `after` and `onError` return the handler itself, so it keeps these properties.
  return Object.defineProperty(made, 'options', { get: optionsNow, enumerable: true }) as unknown as LanesHandler<V, K>;
}
