import type { KafkaHeader, KafkaRecord } from '../event';

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

/** Where a Confluent-compatible registry is, and how to reach it. */
export interface ConfluentRegistryConfig {
  /** Base URL, e.g. `http://127.0.0.1:8081` or Apicurio's `.../apis/ccompat/v7`. */
  readonly url: string;
  /** Basic auth (Confluent Cloud: the API key and secret). */
  readonly username?: string;
  readonly password?: string;
  /** A request not answered in this time counts as a registry that does not answer (default 5 s). */
  readonly timeoutMs?: number;
}

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

/**
 * The header naming the parts a trigger delivered as JSON text (`HandOffHeader.EsmDecoded`; copies keep it; see
 * esm-records.ts). Here, in a module of no code to speak of, so the hand-off headers name it without loading more.
 */
export const ESM_DECODED_HEADER = 'lanes-esm-decoded';

/**
 * Whether the record's `part` holds JSON text its trigger decoded through a schema registry (the `lanes-esm-decoded`
 * header names it), rather than registry-framed bytes.
 *
 * @example
 * isEsmDecoded(record.headers, 'value'); // true for a record delivered by a mapping with `EventRecordFormat: JSON`
 */
export function isEsmDecoded(headers: readonly KafkaHeader[], part: 'key' | 'value'): boolean {
  for (let i = headers.length - 1; i >= 0; i -= 1) {
    const header = headers[i]!;
    if (header.name === ESM_DECODED_HEADER) return header.value.toString('latin1').split(',').includes(part);
  }
  return false;
}

export const REGISTRY_FORMAT: unique symbol = Symbol.for('kafka-lanes.registry-format');
/** The subject a format's `encode` writes under, when its options give `registry`, `subject` and `schema`. */
export const REGISTRY_SUBJECT: unique symbol = Symbol.for('kafka-lanes.registry-subject');

/**
 * A key or value read through a schema registry: a deserializer (bytes, record) => value that kafka-lanes awaits,
 * and the matching serializer for `ctx.send`. Made by `avro()`, `protobuf()` or `jsonSchema()`.
 */
export interface RegistryDeserializer<T> {
  /**
   * `part`: which part of `record` `bytes` are; with it, a part the trigger's schema registry integration delivered
   * as JSON (the record's `lanes-esm-decoded` header) is parsed as that JSON.
   */
  (bytes: Buffer | null, record: KafkaRecord, part?: 'key' | 'value'): Promise<T | null>;
  readonly [REGISTRY_FORMAT]: SchemaFormat;
  readonly [REGISTRY_SUBJECT]: string | undefined;
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

/** Whether `value` is a registry format that can encode: made with `registry`, `subject` and `schema`. */
export function isRegistryWriter(value: unknown): value is RegistryDeserializer<unknown> {
  return isRegistryDeserializer(value) && value[REGISTRY_SUBJECT] !== undefined;
}
