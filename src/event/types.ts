/**
 * Types of the Kafka trigger's event: the JSON shape AWS sends (`Aws*`) and the decoded shape the framework works
 * with. Sources: "Using Lambda with Amazon MSK" and "Using Lambda with self-managed Apache Kafka" (example events),
 * and "Using schema registries with Kafka event sources in Lambda" (schema metadata).
 */

/** The event sources of a Kafka trigger: Amazon MSK, or self-managed Apache Kafka (Confluent Cloud, Redpanda, ...). */
export type KafkaEventSource = 'aws:kafka' | 'SelfManagedKafka';

/** Kafka's timestamp type, by its Java enum name, as AWS sends it. */
export type TimestampType = 'CREATE_TIME' | 'LOG_APPEND_TIME';

/** What an event source mapping with a schema registry adds to a record's key or value. */
export interface SchemaMetadata {
  /** `AVRO`, `PROTOBUF` or `JSON` at the time of writing; kept as a string so a new format is not a decode failure. */
  readonly dataFormat: string;
  readonly schemaId?: string;
}

/** One header as AWS sends it: a one-entry object whose value is a Java `byte[]` (signed bytes, -128..127). */
export type AwsKafkaHeader = Record<string, number[]>;

/** One record as AWS sends it. `key` and `value` are base64; either may be absent or `null`. */
export interface AwsKafkaRecord {
  topic: string;
  partition: number;
  offset: number;
  /** Epoch milliseconds. */
  timestamp: number;
  timestampType: TimestampType;
  key?: string | null;
  value?: string | null;
  headers: AwsKafkaHeader[];
  keySchemaMetadata?: SchemaMetadata;
  valueSchemaMetadata?: SchemaMetadata;
}

interface AwsKafkaEventBase {
  /** One comma-separated string: `"b-1.example:9092,b-2.example:9092"`. */
  bootstrapServers: string;
  /** Keyed `"<topic>-<partition>"`; one event may hold several partitions. */
  records: Record<string, AwsKafkaRecord[]>;
}

/** The event of an Amazon MSK trigger. */
export interface AwsMskEvent extends AwsKafkaEventBase {
  eventSource: 'aws:kafka';
  eventSourceArn: string;
}

/** The event of a self-managed Apache Kafka trigger: no ARN. */
export interface AwsSelfManagedKafkaEvent extends AwsKafkaEventBase {
  eventSource: 'SelfManagedKafka';
}

/** A Kafka trigger's event, exactly as AWS sends it. */
export type AwsKafkaEvent = AwsMskEvent | AwsSelfManagedKafkaEvent;

/** A decoded header. Order and duplicate names are kept as received. */
export interface KafkaHeader {
  readonly name: string;
  readonly value: Buffer;
}

/** A decoded record: bytes as Buffers, coordinates checked, and the record JSON as received in `raw`. */
export interface KafkaRecord {
  readonly topic: string;
  readonly partition: number;
  /** A safe integer: offsets above 2^53-1 cannot survive JSON and are decode failures. */
  readonly offset: number;
  readonly timestamp: number;
  readonly timestampType: TimestampType;
  /** `null` when the key was absent or `null` in the event. */
  readonly key: Buffer | null;
  /** `null` when the value was absent or `null` (a tombstone); an empty value is an empty Buffer. */
  readonly value: Buffer | null;
  readonly headers: readonly KafkaHeader[];
  readonly keySchemaMetadata?: SchemaMetadata;
  readonly valueSchemaMetadata?: SchemaMetadata;
  /**
   * The record JSON object exactly as received (same reference): what gets parked. Under a trigger with a schema
   * registry integration, the record as the producer wrote it instead (registry/esm-records.ts).
   */
  readonly raw: Readonly<AwsKafkaRecord>;
}

/**
 * A record that could not be decoded. Its partition is always known (from its `records` key); its offset only
 * when the record's own `offset` is a valid one. It never stops the rest of the batch.
 */
export interface DecodeFailure {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number | undefined;
  /** Position of the record in its `records` array as received. */
  readonly index: number;
  /** The first field found wrong, as a path: `offset`, `headers[1]`, `record` (the whole record). */
  readonly field: string;
  /** What was expected and what was given: ``Expected `offset` to be ... , got `1e+300` (number)``. */
  readonly reason: string;
  /** `reason` with the record named, for logs and dead-letter headers. */
  readonly message: string;
  /** The record JSON value exactly as received (same reference), whatever it is. */
  readonly raw: unknown;
}

/** The records of one partition in one event: decoded records sorted by offset, and the failures. */
export interface PartitionBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: KafkaRecord[];
  readonly failures: DecodeFailure[];
}

/** A decoded Kafka trigger event. */
export interface DecodedKafkaEvent {
  readonly source: KafkaEventSource;
  readonly eventSourceArn?: string;
  readonly bootstrapServers: string[];
  /** In the order of the event's `records` keys. */
  readonly partitions: PartitionBatch[];
}
