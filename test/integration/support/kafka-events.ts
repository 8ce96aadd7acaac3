/**
 * Events for processor tests, built the way AWS builds them: records really produced to the local broker,
 * fetched back with a consumer, then shaped into a Kafka trigger event (base64, signed-byte headers).
 */
import type { IHeaders } from 'kafkajs';
import { encodeKafkaEvent, type AwsKafkaEvent, type KafkaRecordInput } from '../../../src/event';
import { createKafka, KAFKA_BROKERS, uniqueName } from './stack';

export interface TestMessage {
  readonly key: string | Buffer | null;
  readonly value: string | Buffer | null;
  readonly partition?: number;
  readonly headers?: Record<string, string | Buffer>;
}

export async function produce(topic: string, messages: readonly TestMessage[]): Promise<void> {
  const producer = createKafka().producer();
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += 1000) {
      await producer.send({
        topic,
        acks: -1,
        messages: messages.slice(i, i + 1000).map((m) => ({
          key: m.key,
          value: m.value,
          ...(m.partition === undefined ? {} : { partition: m.partition }),
          ...(m.headers === undefined ? {} : { headers: m.headers }),
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

function headersOf(headers: IHeaders | undefined): Array<{ name: string; value: Buffer }> {
  const out: Array<{ name: string; value: Buffer }> = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined) out.push({ name, value: Buffer.isBuffer(one) ? one : Buffer.from(String(one)) });
    }
  }
  return out;
}

/** Reads `count` records of a topic from the beginning, as a kafkajs consumer sees them. */
export async function fetchRecords(topic: string, count: number): Promise<KafkaRecordInput[]> {
  const consumer = createKafka().consumer({ groupId: uniqueName('fetch'), maxWaitTimeInMs: 100 });
  const records: KafkaRecordInput[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`fetched ${records.length} of ${count} records of ${topic}`)), 60_000);
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          records.push({
            topic,
            partition,
            offset: Number(message.offset),
            timestamp: Number(message.timestamp),
            timestampType: 'CREATE_TIME',
            key: message.key,
            value: message.value,
            headers: headersOf(message.headers),
          });
          if (records.length >= count) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return records.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

/** One self-managed Kafka trigger event holding the given records. */
export function eventOf(records: readonly KafkaRecordInput[]): AwsKafkaEvent {
  return encodeKafkaEvent({ source: 'SelfManagedKafka', bootstrapServers: KAFKA_BROKERS, records });
}

/** A Lambda context whose deadline is `remainingMs` from now. */
export function contextWithin(remainingMs: number): { getRemainingTimeInMillis(): number; awsRequestId: string } {
  const deadline = Date.now() + remainingMs;
  return { getRemainingTimeInMillis: () => deadline - Date.now(), awsRequestId: uniqueName('req') };
}
