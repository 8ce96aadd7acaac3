/**
 * kafka-lanes: Kafka-triggered serverless functions that run records concurrently with per-key order, a
 * Redis completion bitmap, retry and dead-letter topics. What a handler author uses, and nothing else:
 * operator and admin tools are in `kafka-lanes/operator`. Importing it loads no engine: the engine is
 * loaded at the first invocation.
 *
 * @example
 * import { lanes, NonRetriableError } from 'kafka-lanes';
 * export const handler = lanes({ group: 'orders', value: 'json' }, async (record, ctx) => {
 *   if (!record.value) throw new NonRetriableError('empty order');
 *   await save(record.value, { signal: ctx.signal });
 * });
 */
export { lanes, type LanesHandler, type LanesMiddleware, type LanesRequest, type RecordPartOf } from './handler/lanes';
export type { LanesContext, LanesRecord, RecordHandler } from './engine/types';
export type { LanesOptionsInput, Ordering, KeyOf, Deserializer, DeserializerFn, BackoffInput, RetryOptionsInput } from './options';
export type { LanesOptions, Backoff, RetryOptions, KafkaOptions, RedisOptions, KafkaOptionsInput, RedisOptionsInput, SaslInput } from './options';
export type { StandardSchemaV1 } from './options/standard-schema';
export type { KafkaBatchResponse, KafkaHeader } from './event';
export { LanesError, ConfigError, NonRetriableError, RetryLaterError, DeadlineError, RecordTimeoutError } from './errors';
export { DeserializationError } from './options/errors';
export { SchemaRegistryUnavailableError } from './registry/errors';
export { avro, protobuf, jsonSchema, type RegistryDeserializer, type RegistryFormatOptions, type GlueSchemaSource, type ConfluentRegistryConfig, type SchemaFormat } from './registry';
export { SchemaValidationError } from './options/standard-schema';
export type { OutputRecord } from './lanes/effects';
export type { StepSerializer } from './options/lanes-options';
export { StepNameError, StepResultTooLargeError } from './errors';
export { idempotencyCacheClient } from './connections/powertools-cache';
