import type { KafkaMessage } from 'kafkajs';
import { decodeKafkaEvent } from './decode';
import { encodeKafkaRecord } from './encode';
import type { AwsKafkaRecord, KafkaRecord } from './types';

/**
 * A message a kafkajs consumer read, as Lambda's event source would deliver it: base64 key and value, each header
 * as its own entry (kafkajs gathers a repeated name into an array; AWS keeps every entry, in order), the
 * timestamp's type from the batch (`LOG_APPEND_TIME` when the topic stamps records itself).
 *
 * @example
 * awsRecordOfMessage('orders', 0, message); // { topic: 'orders', partition: 0, offset: 15, key: 'aw==', ... }
 */
export function awsRecordOfMessage(topic: string, partition: number, message: KafkaMessage): AwsKafkaRecord {
  const headers: Array<{ name: string; value: Uint8Array }> = [];
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined) headers.push({ name, value: typeof one === 'string' ? Buffer.from(one) : one });
    }
  }
  const context = (message as KafkaMessage & { batchContext?: { timestampType?: number } }).batchContext;
  return encodeKafkaRecord({
    topic,
    partition,
    offset: Number(message.offset),
    timestamp: Number(message.timestamp),
    timestampType: context?.timestampType === 1 ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    key: message.key,
    value: message.value,
    headers,
  });
}

/**
 * A message a kafkajs consumer read, decoded as the handler sees a delivered record (the recovery's reads, the
 * dead letters an operator lists or replays).
 *
 * @example
 * recordOfMessage('orders', 0, message).value; // the value's bytes, as `record.value` of a 'raw' handler
 */
export function recordOfMessage(topic: string, partition: number, message: KafkaMessage): KafkaRecord {
  const raw = awsRecordOfMessage(topic, partition, message);
  return decodeKafkaEvent({ eventSource: 'SelfManagedKafka', records: { [`${topic}-${partition}`]: [raw] } }).partitions[0]!.records[0]!;
}
