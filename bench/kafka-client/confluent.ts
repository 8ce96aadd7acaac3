/**
 * @confluentinc/kafka-javascript (librdkafka) behind the Kafka client seam's producer, through its KafkaJS-compatible
 * API, as far as the measurement needs. It is not a devDependency: its install downloads a prebuilt binary from
 * outside the npm registry and, failing that, builds librdkafka from source (docs/kafka-client.md, "Installing").
 * Point `CONFLUENT_KAFKA_DIR` at a folder where it is installed (its `node_modules` holds it); unset, the
 * benchmarks leave this client out and say so.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ProducerBatch, ProducerConfig } from 'kafkajs';
import type { KafkaProducer, ProducerFactory } from '../../src/connections/kafka-client';

interface ConfluentProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  sendBatch(batch: ProducerBatch): Promise<unknown>;
}
interface ConfluentKafka {
  producer(config: { kafkaJS: Record<string, unknown> } & Record<string, unknown>): ConfluentProducer;
}
interface ConfluentModule {
  KafkaJS: { Kafka: new (config: { kafkaJS: Record<string, unknown> }) => ConfluentKafka };
}

/** The installed module, or `undefined` when `CONFLUENT_KAFKA_DIR` is not set. */
export function loadConfluent(dir = process.env.CONFLUENT_KAFKA_DIR): ConfluentModule | undefined {
  if (dir === undefined || dir === '') return undefined;
  return createRequire(join(dir, 'package.json'))('@confluentinc/kafka-javascript') as ConfluentModule;
}

/** A producer factory on @confluentinc/kafka-javascript for the writers. */
export class ConfluentProducers implements ProducerFactory {
  readonly #kafka: ConfluentKafka;

  constructor(module: ConfluentModule, brokers: readonly string[], clientId = 'bench') {
    // logLevel 1: errors only, as the framework's kafkajs clients.
    this.#kafka = new module.KafkaJS.Kafka({ kafkaJS: { clientId, brokers: [...brokers], logLevel: 1 } });
  }

  producer(config: ProducerConfig = {}): KafkaProducer {
    // librdkafka keeps a message's partition across its own retries, so the hand-off writer's partitioner (which
    // exists for kafkajs's re-partitioning retries) is not needed; its KafkaJS layer refuses `createPartitioner`
    // and partitions keyed messages with murmur2, as Java and kafkajs do.
    const producer = this.#kafka.producer({
      kafkaJS: {
        idempotent: config.idempotent ?? true,
        acks: -1,
        maxInFlightRequests: config.maxInFlightRequests ?? 1,
        allowAutoTopicCreation: config.allowAutoTopicCreation ?? false,
        retry: { retries: config.retry?.retries ?? 5 },
      },
    });
    return {
      connect: () => producer.connect(),
      disconnect: () => producer.disconnect(),
      // acks and the broker's timeout are the producer's settings here (acks=-1 above), refused on a send. Its send
      // replaces each message's `headers` with its own form, so a message sent again (the hand-off writer resends a
      // refused send's copies one by one) would fail: each goes as a copy.
      sendBatch: async ({ topicMessages = [] }) => {
        await producer.sendBatch({ topicMessages: topicMessages.map(({ topic, messages }) => ({ topic, messages: messages.map((message) => ({ ...message })) })) });
        return [];
      },
    };
  }
}
