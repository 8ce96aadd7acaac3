import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { recordOfMessage, type KafkaRecord } from '../event';
import { recoveryGroupPrefix } from '../options/names';

/**
 * Where a recovery finds a partition's records again: Kafka in every deployment (`kafkaRecordLog`); any other
 * log that holds the same records at the same offsets will do (a test's in-memory log).
 */
export interface RecordLog {
  /** The earliest offset the partition still holds and its end (the next offset to be written). */
  offsets(topic: string, partition: number): Promise<{ readonly low: number; readonly end: number }>;
  /** The records at offsets `[from, end)`, in offset order; offsets the log no longer has are absent. */
  read(topic: string, partition: number, from: number, end: number): Promise<KafkaRecord[]>;
}

/**
 * The records of Kafka: offsets from the admin API, records through `readRange`.
 *
 * @example
 * const log = kafkaRecordLog(kafka, 'orders');
 * const { low, end } = await log.offsets('orders', 0);
 * const records = await log.read('orders', 0, low, end);
 */
export function kafkaRecordLog(kafka: Kafka, group: string): RecordLog {
  return {
    async offsets(topic, partition) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const found = (await admin.fetchTopicOffsets(topic)).find((o) => o.partition === partition);
        return { low: Number(found?.low ?? 0), end: Number(found?.high ?? 0) };
      } finally {
        await admin.disconnect();
      }
    },
    read: (topic, partition, from, end) => readRange(kafka, group, { topic, partition, from, end }),
  };
}

/** Offsets `[from, end)` of one partition. */
export interface PartitionRange {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly end: number;
}

/** How long a read waits without a new record before it takes the range as read (offsets may be markers). */
export const READ_IDLE_MS = 5_000;

/**
 * Reads the records of one partition at offsets `[from, end)` again from Kafka, in offset order, as the event
 * source would have delivered them. A consumer of a throw-away group `<group>.lanes.recover.<random>` (granted by
 * prefix; one per read, so concurrent reads never rebalance one another), seeking to `from`; it commits nothing.
 * Offsets Kafka no longer has (compaction, transaction markers) are simply absent.
 *
 * @example
 * const records = await readRange(kafka, 'orders-svc', { topic: 'orders', partition: 0, from: 20, end: 40 }); // what was delivered between 20 and 39
 */
export async function readRange(kafka: Kafka, group: string, range: PartitionRange): Promise<KafkaRecord[]> {
  const { topic, partition, from, end } = range;
  if (end <= from) return [];
  // A consumer kafkajs does not restart after a failure it gives up on (a refused group: GROUP_AUTHORIZATION_FAILED):
  // its crash fails the read, instead of a restart loop the recovery would wait on until the function's timeout.
  const consumer = kafka.consumer({
    groupId: `${recoveryGroupPrefix(group)}${randomBytes(6).toString('hex')}`,
    maxWaitTimeInMs: 200,
    retry: { restartOnFailure: async () => false },
  });
  await consumer.connect();
  const records: KafkaRecord[] = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: false });
    await new Promise<void>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        clearTimeout(idle);
        reject(payload.error);
      });
      const settle = (): void => {
        clearTimeout(idle);
        resolve();
      };
      const arm = (): void => {
        clearTimeout(idle);
        idle = setTimeout(settle, READ_IDLE_MS);
      };
      consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          if (batch.partition !== partition) return;
          arm();
          for (const message of batch.messages) {
            const offset = Number(message.offset);
            if (offset >= from && offset < end) records.push(recordOfMessage(topic, partition, message));
          }
          if (Number(batch.lastOffset()) >= end - 1) settle();
        },
      }).then(() => {
        try {
          consumer.seek({ topic, partition, offset: String(from) });
          arm();
        } catch (error) {
          // The consumer crashed while starting (its crash rejected the read already).
          reject(error);
        }
      }, reject);
    });
  } finally {
    await consumer.disconnect();
  }
  records.sort((a, b) => a.offset - b.offset);
  return records.filter((record, i) => i === 0 || records[i - 1]!.offset !== record.offset);
}
