/** The `"<topic>-<partition>"` keys of the event's `records` map and of the partial batch response. */

/** A partition of a topic. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

// Kafka partitions are int32; a canonical decimal (no sign, no leading zero) so that one partition has one key.
const PARTITION = /^(?:0|[1-9][0-9]{0,9})$/;
const MAX_PARTITION = 2_147_483_647;

/**
 * The key AWS uses for a partition.
 *
 * @example
 * topicPartitionKey('orders-eu', 3); // 'orders-eu-3'
 */
export function topicPartitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/**
 * Splits a `"<topic>-<partition>"` key at its last `-` (topic names may contain `-`); `undefined` if the key has
 * no `-`, an empty topic, or a partition that is not a canonical non-negative int32.
 *
 * @example
 * parseTopicPartitionKey('orders-eu-3'); // { topic: 'orders-eu', partition: 3 }
 * parseTopicPartitionKey('orders'); // undefined
 */
export function parseTopicPartitionKey(key: string): TopicPartition | undefined {
  const dash = key.lastIndexOf('-');
  const topic = key.slice(0, dash);
  const digits = key.slice(dash + 1);
  if (dash < 1 || !PARTITION.test(digits)) return undefined;
  const partition = Number(digits);
  return partition <= MAX_PARTITION ? { topic, partition } : undefined;
}

/**
 * True if `value` is a partition number: an integer in 0..2^31-1.
 *
 * @example
 * isPartition(3); // true
 */
export function isPartition(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_PARTITION;
}

/**
 * True if `value` is an offset the framework can hold exactly: a non-negative safe integer.
 *
 * @example
 * isOffset(15); // true
 * isOffset(2 ** 53); // false: JSON.parse may already have rounded it
 */
export function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
