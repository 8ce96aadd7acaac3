/**
 * @platformatic/kafka behind the Kafka client seam's producer (src/connections/kafka-client.ts), as far as the
 * measurement needs: an idempotent producer (acks=all, one request in flight) whose `sendBatch` takes kafkajs's
 * `topicMessages`, so the framework's own hand-off writer and output writer run on it unchanged. Bench-only: errors
 * pass through as the client throws them (the writers' refusal reading knows kafkajs's), which the happy path the
 * benchmark measures never meets.
 */
import { Producer, type MessageToProduce } from '@platformatic/kafka';
import type { Message, PartitionerArgs, PartitionMetadata, ProducerBatch, ProducerConfig } from 'kafkajs';
import type { KafkaProducer, ProducerFactory } from '../../src/connections/kafka-client';

type Out = MessageToProduce<Buffer, Buffer, Buffer, Buffer>;

const toBuffer = (value: string | Buffer): Buffer => (typeof value === 'string' ? Buffer.from(value) : value);

/**
 * Header values as @platformatic/kafka takes them: a Map keyed by Buffer objects, so a name that repeats (kafkajs's
 * array value; Kafka keeps duplicates in order) stays as many headers, each its own key object.
 */
function headersOf(headers: Message['headers']): Map<Buffer, Buffer> | undefined {
  if (headers === undefined) return undefined;
  const out = new Map<Buffer, Buffer>();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) out.set(Buffer.from(name), toBuffer(one));
    else out.set(Buffer.from(name), toBuffer(value));
  }
  return out;
}

/** A producer factory on @platformatic/kafka for the writers: `new PlatformaticProducers(brokers).producer(config)`. */
export class PlatformaticProducers implements ProducerFactory {
  readonly #brokers: readonly string[];
  readonly #clientId: string;

  constructor(brokers: readonly string[], clientId = 'bench') {
    this.#brokers = brokers;
    this.#clientId = clientId;
  }

  producer(config: ProducerConfig = {}): KafkaProducer {
    // A kafkajs partitioner given (the hand-off writer's: murmur2 of the key as Java, a fixed slot for keyless
    // copies) is asked with kafkajs's arguments; otherwise keyed messages get Java's partitioner (murmur2 & 0x7fffffff;
    // the client's own default, `murmur2 >>> 0`, puts some keys on another partition than Java and kafkajs do).
    const kafkajsPartitioner = config.createPartitioner?.();
    let partitionMetadata: { lastUpdate: number; topic: string; list: PartitionMetadata[] } | undefined;
    const producer = new Producer<Buffer, Buffer, Buffer, Buffer>({
      clientId: this.#clientId,
      bootstrapBrokers: [...this.#brokers],
      idempotent: config.idempotent ?? true,
      acks: -1,
      autocreateTopics: config.allowAutoTopicCreation ?? false,
      retries: config.retry?.retries ?? 5,
      retryDelay: config.retry?.initialRetryTime ?? 100,
      ...(kafkajsPartitioner === undefined
        ? {}
        : {
            partitioner: (message: Out, _key: Buffer | undefined, context): number => {
              const { topic } = message;
              const metadata = context.metadata?.topics.get(topic);
              if (metadata === undefined) return 0;
              if (partitionMetadata?.topic !== topic || partitionMetadata.lastUpdate !== metadata.lastUpdate) {
                const list = metadata.partitions.map((p, partitionId) => ({ partitionId, leader: p.leader, partitionErrorCode: 0, replicas: p.replicas, isr: p.isr }));
                partitionMetadata = { topic, lastUpdate: metadata.lastUpdate, list };
              }
              const args: PartitionerArgs = { topic, partitionMetadata: partitionMetadata.list, message: message.metadata as Message };
              return kafkajsPartitioner(args);
            },
          }),
    });
    let connected: Promise<void> | undefined;
    return {
      connect: () => (connected ??= producer.initIdempotentProducer({}).then(() => undefined)),
      disconnect: () => producer.close(),
      sendBatch: async (batch: ProducerBatch) => {
        const messages: Out[] = [];
        for (const { topic, messages: list } of batch.topicMessages ?? []) {
          for (const message of list) {
            const out: Out = {
              topic,
              key: message.key === null || message.key === undefined ? undefined : toBuffer(message.key),
              value: message.value === null ? undefined : toBuffer(message.value),
              metadata: message,
            };
            const headers = headersOf(message.headers);
            if (headers !== undefined) out.headers = headers;
            if (message.partition !== undefined) out.partition = message.partition;
            messages.push(out);
          }
        }
        await producer.send({ messages, acks: -1 });
        return [];
      },
    };
  }
}
