import { describeValue } from '../errors';
import { bufferToSignedBytes, encodeBase64 } from './bytes';
import { isOffset, isPartition, topicPartitionKey } from './topic-partition';
import type { AwsKafkaEvent, AwsKafkaRecord, SchemaMetadata, TimestampType } from './types';

/** A record to encode. A decoded `KafkaRecord` is one, so a decoded record can be encoded again. */
export interface KafkaRecordInput {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** Default `CREATE_TIME`. */
  readonly timestampType?: TimestampType;
  /** `undefined`: the field is left out; `null`: sent as `null`. */
  readonly key?: Uint8Array | null;
  /** `undefined`: the field is left out; `null`: sent as `null` (a tombstone). */
  readonly value?: Uint8Array | null;
  readonly headers?: ReadonlyArray<{ readonly name: string; readonly value: Uint8Array }>;
  readonly keySchemaMetadata?: SchemaMetadata;
  readonly valueSchemaMetadata?: SchemaMetadata;
}

interface EncodeCommon {
  /** Joined with `,` into AWS' single string. Default none (`""`). */
  readonly bootstrapServers?: readonly string[];
  readonly records: readonly KafkaRecordInput[];
}

/** What `encodeKafkaEvent` builds: an MSK event (with its cluster ARN) or a self-managed one (no ARN). */
export type EncodeKafkaEventInput =
  | (EncodeCommon & { readonly source: 'aws:kafka'; readonly eventSourceArn: string })
  | (EncodeCommon & { readonly source: 'SelfManagedKafka' });

/**
 * Builds one record exactly as AWS sends it: base64 key and value, headers as one-entry objects of signed bytes.
 *
 * @throws RangeError if `topic` is empty, `partition` is not a non-negative int32 or `offset` not a non-negative
 * safe integer (a bug in the caller: these records are made by tests and the local emulator).
 * @example
 * encodeKafkaRecord({ topic: 'orders', partition: 0, offset: 15, timestamp: 1545084650987,
 *   key: Buffer.from('k'), value: Buffer.from('{}'), headers: [{ name: 'lang', value: Buffer.from('ë') }] });
 * // { topic: 'orders', ..., key: 'aw==', value: 'e30=', headers: [{ lang: [-61, -85] }] }
 */
export function encodeKafkaRecord(record: KafkaRecordInput): AwsKafkaRecord {
  const { topic, partition, offset } = record;
  if (typeof topic !== 'string' || topic === '') throw new RangeError(`Expected \`topic\` to be a non-empty string, got ${describeValue(topic)}`);
  if (!isPartition(partition)) throw new RangeError(`Expected \`partition\` to be a non-negative int32, got ${describeValue(partition)}`);
  if (!isOffset(offset)) throw new RangeError(`Expected \`offset\` to be a non-negative safe integer, got ${describeValue(offset)}`);
  return {
    topic,
    partition,
    offset,
    timestamp: record.timestamp,
    timestampType: record.timestampType ?? 'CREATE_TIME',
    ...(record.key === undefined ? {} : { key: record.key === null ? null : encodeBase64(record.key) }),
    ...(record.value === undefined ? {} : { value: record.value === null ? null : encodeBase64(record.value) }),
    // A computed key makes an own property even for the name `__proto__`, as JSON.parse does.
    headers: (record.headers ?? []).map(({ name, value }) => ({ [name]: bufferToSignedBytes(value) })),
    ...(record.keySchemaMetadata === undefined ? {} : { keySchemaMetadata: { ...record.keySchemaMetadata } }),
    ...(record.valueSchemaMetadata === undefined ? {} : { valueSchemaMetadata: { ...record.valueSchemaMetadata } }),
  };
}

/**
 * Builds a Kafka trigger event exactly as AWS sends it, the inverse of `decodeKafkaEvent`: for tests and for the
 * local emulator. Records are grouped under `"<topic>-<partition>"` keys in the order their partitions first
 * appear, and keep the given order within a partition. Pure: no I/O, no clock.
 *
 * @example
 * const event = encodeKafkaEvent({
 *   source: 'SelfManagedKafka',
 *   bootstrapServers: ['localhost:9092'],
 *   records: [{ topic: 'orders', partition: 0, offset: 0, timestamp: 0, value: Buffer.from('{"id":1}') }],
 * });
 * decodeKafkaEvent(event).partitions[0]?.records[0]?.value?.toString(); // '{"id":1}'
 */
export function encodeKafkaEvent(input: EncodeKafkaEventInput): AwsKafkaEvent {
  const byPartition = new Map<string, AwsKafkaRecord[]>();
  for (const record of input.records) {
    const key = topicPartitionKey(record.topic, record.partition);
    const list = byPartition.get(key) ?? [];
    list.push(encodeKafkaRecord(record));
    byPartition.set(key, list);
  }
  const records = Object.fromEntries(byPartition);
  const bootstrapServers = (input.bootstrapServers ?? []).join(',');
  return input.source === 'aws:kafka'
    ? { eventSource: 'aws:kafka', eventSourceArn: input.eventSourceArn, bootstrapServers, records }
    : { eventSource: 'SelfManagedKafka', bootstrapServers, records };
}
