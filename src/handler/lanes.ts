import middy, { type MiddyfiedHandler } from '@middy/core';
import type { Context } from 'aws-lambda';
import { brokersId, kafkaClientConfig } from '../connections/kafka';
import { importKafkaJs } from '../connections/kafkajs';
import { connectRedis } from '../connections/redis';
import type { KafkaBatchResponse } from '../event';
import type { HandOffWriter } from '../handoff/writer';
import type { OutputWriter } from '../handoff/output-writer';
import { deadLetterTopic, resolveOptions, type LanesOptionsInput, type LanesOptions, type PartOutput } from '../options';
import type { LanesFunction, HandOffSink, RecordHandler } from './lanes-function';
import { importTelemetry } from '../telemetry';
import { declaredOutputs, sendDeclared } from './declared-outputs';

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

/**
 * What `lanes(...)` returns: the Lambda handler to export (a middy handler: add your own middlewares with
 * `.use()`), with the options resolved at cold start, the record handler it runs, and `close()`.
 *
 * @example
 * export const handler: LanesHandler<Order> = lanes({ value: order }, async (record) => save(record.value));
 */
export type LanesHandler<V = unknown, K = string | null> = MiddyfiedHandler<unknown, KafkaBatchResponse, Error, Context> & {
  /** The options as resolved and validated at cold start. */
  readonly options: LanesOptions;
  /** The per-record function given to `lanes` (what `kafka-lanes/testing` runs). */
  readonly recordHandler: RecordHandler<V, K>;
  /** Closes the connections (Lambda never needs it; tests and the local emulator do). */
  close(): Promise<void>;
};

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
  const options = resolveOptions(input);
  const writers = new Map<string, Promise<Writers>>();
  let lanesFunction: Promise<LanesFunction> | undefined;
  // Made at the first invocation: the logger, the metrics and the Redis client (ioredis is loaded then, not at
  // cold start). Concurrent first invocations (the local emulator) share one.
  const makeFunction = async (): Promise<LanesFunction> => {
    const [telemetry, { LanesFunction }] = await Promise.all([importTelemetry(options.group), import('./lanes-function')]);
    return new LanesFunction({
      options,
      handler: handler as RecordHandler,
      redis: await connectRedis(options, telemetry),
      handOff: handOffFactory(options, writers),
      telemetry,
    });
  };
  const base = async (event: unknown, context: Context): Promise<KafkaBatchResponse> => {
    if (lanesFunction === undefined) {
      lanesFunction = makeFunction();
      lanesFunction.catch(() => (lanesFunction = undefined));
    }
    return (await lanesFunction).process(event, context);
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
    await (await current?.catch(() => undefined))?.store.redis.quit();
  };
  return Object.assign(middy<unknown, KafkaBatchResponse, Error, Context>(base), { options, recordHandler: handler, close });
}
