import type { Producer } from 'kafkajs';
import type { ReplayCopy } from './types';

/**
 * Writes a dead letter back to its origin topic (`kafka-lanes dlq replay`), acks=all, the copy built by
 * `copies.replay`. Not a hand-off (the record is written anew, nothing waits on it), so a refusal is the command's
 * error, not a dead letter.
 *
 * @example
 * await writeReplay(producer, copiesFor(options, Date.now).replay({ record, origin }));
 */
export async function writeReplay(producer: Pick<Producer, 'send'>, copy: ReplayCopy): Promise<void> {
  await producer.send({ topic: copy.topic, acks: -1, messages: [{ key: copy.key, value: copy.value, headers: copy.headers }] });
}
