import { describeValue } from '../errors';
import { isOffset, isPartition, topicPartitionKey } from './topic-partition';

/** Names a record in a Kafka partial batch response: an object, not the SQS / Kinesis string. */
export interface KafkaItemIdentifier {
  /** `"<topic>-<partition>"`, the same key as in the event's `records`. */
  readonly partition: string;
  readonly offset: number;
}

/** One failed record of a Kafka partial batch response. */
export interface KafkaBatchItemFailure {
  readonly itemIdentifier: KafkaItemIdentifier;
}

/** A Kafka partial batch response; an empty list means the whole batch succeeded. */
export interface KafkaBatchResponse {
  readonly batchItemFailures: KafkaBatchItemFailure[];
}

/** A record's coordinates: a decoded `KafkaRecord` or a `DecodeFailure` with a known offset is one. */
export interface RecordCoordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/**
 * Builds the partial batch response that tells the Kafka event source mapping which records were not processed
 * (it takes effect only when the mapping has `ReportBatchItemFailures`). Keeps the given order and drops repeats.
 *
 * @throws RangeError if a partition or offset is not a valid number (a bug in the caller).
 * @example
 * return batchItemFailures([{ topic: 'orders-eu', partition: 3, offset: 42 }]);
 * // { batchItemFailures: [{ itemIdentifier: { partition: 'orders-eu-3', offset: 42 } }] }
 * return batchItemFailures([]); // { batchItemFailures: [] }: the whole batch succeeded
 */
export function batchItemFailures(items: readonly RecordCoordinates[]): KafkaBatchResponse {
  const seen = new Set<string>();
  const failures: KafkaBatchItemFailure[] = [];
  for (const { topic, partition, offset } of items) {
    if (!isPartition(partition)) throw new RangeError(`Expected \`partition\` to be a non-negative int32, got ${describeValue(partition)}`);
    if (!isOffset(offset)) throw new RangeError(`Expected \`offset\` to be a non-negative safe integer, got ${describeValue(offset)}`);
    const key = topicPartitionKey(topic, partition);
    const id = `${offset}@${key}`;
    if (seen.has(id)) continue;
    seen.add(id);
    failures.push({ itemIdentifier: { partition: key, offset } });
  }
  return { batchItemFailures: failures };
}
