import type { KafkaRecord } from '../event';
import type { ConfluentRegistryConfig } from './confluent-client';

/** The schema languages a registry holds. */
export type SchemaFormat = 'avro' | 'protobuf' | 'json';

/** A schema as a registry gives it. */
export interface RegisteredSchema {
  readonly format: SchemaFormat;
  /** The schema text: Avro JSON, a `.proto` file, a JSON Schema. */
  readonly definition: string;
  /** How messages name it: `schema id 7`, `Glue schema version <uuid>`. */
  readonly ref: string;
}

/**
 * Where a Glue-framed payload's schema is read: by default Glue's `GetSchemaVersion` through
 * `@aws-sdk/client-glue` (installed by the service), with the function's credentials. A source gives `undefined`
 * for a version it does not have (the record is dead-lettered); a source that throws is a registry that does not
 * answer (the record waits).
 */
export type GlueSchemaSource = (versionId: string) => Promise<{ readonly dataFormat: string; readonly definition: string } | undefined>;

/** The registries a key or value may come from; at least one. */
export interface RegistryFormatOptions {
  /** A Confluent-compatible registry (Confluent, Apicurio's `ccompat`, Redpanda, Karapace): its URL or its config. */
  readonly registry?: string | ConfluentRegistryConfig;
  /**
   * AWS Glue Schema Registry: `true` (the function's region and credentials), `{ region }`, or a function that
   * gives a schema version's definition (tests, another client).
   */
  readonly glue?: true | { readonly region?: string } | GlueSchemaSource;
  /** The subject `encode` registers its schema under (Confluent); e.g. `orders-value` for topic `orders`. */
  readonly subject?: string;
  /** The schema `encode` writes with: Avro JSON (text or object), a `.proto` file, a JSON Schema. */
  readonly schema?: string | object;
  /** Protobuf only: the message type `encode` writes (full name); default the file's first message. */
  readonly messageType?: string;
}

export const REGISTRY_FORMAT: unique symbol = Symbol.for('kafka-lanes.registry-format');

/**
 * A key or value read through a schema registry: a deserializer (bytes, record) => value that kafka-lanes awaits,
 * and the matching serializer for `ctx.send`. Made by `avro()`, `protobuf()` or `jsonSchema()`.
 */
export interface RegistryDeserializer<T> {
  (bytes: Buffer | null, record: KafkaRecord): Promise<T | null>;
  readonly [REGISTRY_FORMAT]: SchemaFormat;
  /**
   * The bytes of `value` in Confluent's wire format, under the options' `subject` and `schema` (registered when
   * the subject lacks it), for `ctx.send`.
   */
  encode(value: T): Promise<Buffer>;
}

/**
 * Whether `value` came from `avro()`, `protobuf()` or `jsonSchema()`. Here, beside the symbol, so the options read
 * it without loading the registry's factories.
 */
export function isRegistryDeserializer(value: unknown): value is RegistryDeserializer<unknown> {
  return typeof value === 'function' && (value as unknown as Record<symbol, unknown>)[REGISTRY_FORMAT] !== undefined;
}
