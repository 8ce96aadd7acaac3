import type { KafkaRecordInput } from '../event';
import { handOffMessage } from '../handoff/headers';
import type { HandOffItem } from '../ports/handoff';

/**
 * A hand-off copy as the broker hands it back: the message the writer produces for `item` (its key, value and
 * framework headers), read from `item.topic`, partition 0, at `offset`.
 *
 * @example
 * const event = encodeKafkaEvent({ source: 'SelfManagedKafka', records: [copyRecord(item, 0)] });
 */
export function copyRecord(item: HandOffItem, offset: number, timestamp = Date.now()): KafkaRecordInput {
  const message = handOffMessage(item);
  const headers = Object.entries(message.headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) => ({ name, value: Buffer.from(one as string | Buffer) })));
  return {
    topic: item.topic, partition: 0, offset, timestamp,
    key: message.key === null || message.key === undefined ? null : Buffer.from(message.key),
    value: message.value === null ? null : Buffer.from(message.value),
    headers,
  };
}
