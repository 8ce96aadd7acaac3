import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { brokersId, createRedis, kafkaConnectionConfig, loadKafkaJs } from '../connections';
import type { KafkaBatchResponse } from '../event';
import { HAND_OFF_WRITER_DEFAULTS, HandOffWriter, producerRetry } from '../handoff';
import { deadLetterTopic, resolveOptions, type LanesOptionsInput, type LanesOptions, type PartOutput } from '../options';
import { Processor, type HandOffSink, type RecordHandler } from './processor';
import { createTelemetry, type Telemetry } from './telemetry';

/** Connections a handler keeps across invocations of one Lambda execution environment. */
export function connectRedis(options: LanesOptions, telemetry: Telemetry): Redis | Cluster {
  // Fail fast: a command waits for at most two reconnects, so an unreachable Redis makes the batch
  // report its records as not handed off well before the Lambda deadline.
  // A command that gets no answer (a silent node, a connection dropped while Lambda was frozen) fails
  // after `commandTimeout` instead of holding the invocation past its deadline.
  const common: RedisOptions = { maxRetriesPerRequest: 2, connectTimeout: 2_000, commandTimeout: 3_000, keepAlive: 10_000 };
  const redis = createRedis(options.redis, common);
  // Without a listener ioredis prints every reconnect error; failed commands already surface per batch.
  redis.on('error', (error: Error) => telemetry.logger.warn('Redis connection error', { error: error.message }));
  return redis;
}

function handOffFactory(options: LanesOptions, writers: Map<string, HandOffWriter>): (bootstrapServers: readonly string[]) => HandOffSink {
  const writerFor = (bootstrapServers: readonly string[]): HandOffWriter => {
    const id = brokersId(options.kafka, bootstrapServers);
    let writer = writers.get(id);
    if (writer === undefined) {
      // kafkajs loads here, at the first hand-off, not at cold start (see `loadKafkaJs`).
      const { Kafka, logLevel } = loadKafkaJs();
      const kafka = new Kafka({
        // Brokers, TLS and SASL (MSK IAM included) for every client the framework opens: src/connections.
        ...kafkaConnectionConfig(options.kafka, bootstrapServers),
        logLevel: logLevel.ERROR,
        // Bounded like the writer's own timeout, so an unreachable broker fails a batch in time and
        // an abandoned connect does not go on retrying in the background.
        retry: producerRetry(HAND_OFF_WRITER_DEFAULTS.timeoutMs),
        connectionTimeout: 3_000,
      });
      writer = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(options.group) });
      writers.set(id, writer);
    }
    return writer;
  };
  // The processor takes a sink at every invocation, but most invocations write nothing: the writer, and kafkajs
  // with it, is made at the first write.
  return (bootstrapServers) => ({ write: async (items, writeOptions) => writerFor(bootstrapServers).write(items, writeOptions) });
}

/**
 * What the handler's `record.key` or `record.value` is for the options given: the schema's output, `string |
 * null` for `'string'`, `Buffer | null` for `'raw'`, a function's return type, `unknown` for JSON.
 */
export type RecordPartOf<O, Name extends 'key' | 'value'> = Name extends keyof O
  ? PartOutput<Exclude<O[Name], undefined>, Name extends 'key' ? string | null : unknown>
  : Name extends 'key' ? string | null : unknown;

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
export function lanes<O extends LanesOptionsInput, V = RecordPartOf<O, 'value'>, K = RecordPartOf<O, 'key'>>(input: O, handler: RecordHandler<V, K>) {
  const options = resolveOptions(input);
  const writers = new Map<string, HandOffWriter>();
  let processor: Processor | undefined;
  const base = async (event: unknown, context: Context): Promise<KafkaBatchResponse> => {
    if (processor === undefined) {
      const telemetry = createTelemetry(options.group);
      processor = new Processor({
        options,
        handler: handler as RecordHandler,
        redis: connectRedis(options, telemetry),
        handOff: handOffFactory(options, writers),
        telemetry,
      });
    }
    return processor.process(event, context);
  };
  /** Closes the connections (Lambda never needs it; tests and the local emulator do). */
  const close = async (): Promise<void> => {
    await Promise.all([...writers.values()].map((writer) => writer.disconnect()));
    writers.clear();
    await processor?.store.redis.quit();
    processor = undefined;
  };
  return Object.assign(middy<unknown, KafkaBatchResponse, Error, Context>(base), { options, close });
}
