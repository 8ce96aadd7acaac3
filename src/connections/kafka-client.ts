/**
 * The Kafka client seam: the few operations the framework needs of a Kafka client, named once. kafkajs's `Kafka`
 * is the implementation (it satisfies this structurally: `new Kafka(config)` is a `KafkaClient`); another client
 * fits behind the same names by adapting to them (bench/kafka-client/ holds the adapters the measurement of
 * docs/kafka-client.md used). The nouns are kafkajs's because kafkajs is the client in use.
 */
import type { Admin, Consumer, ConsumerConfig, KafkaConfig, Producer, ProducerConfig } from 'kafkajs';
import { kafkaLogCreator } from './kafka-log';
import { importKafkaJs } from './kafkajs';

/**
 * Produce: an idempotent producer (one request in flight), a batch of messages with headers over any topics,
 * acknowledged with acks=all (`sendBatch({ topicMessages, acks: -1, timeout })`). The hand-off writer and the output
 * writer use nothing else.
 */
export type KafkaProducer = Pick<Producer, 'connect' | 'sendBatch' | 'disconnect'>;

/** The admin calls of the topics resource, the committer, `status`, `doctor`, `rewind` and recovery. */
export type KafkaAdmin = Pick<
  Admin,
  | 'connect'
  | 'disconnect'
  | 'listTopics'
  | 'createTopics'
  | 'createPartitions'
  | 'deleteTopics'
  | 'fetchTopicMetadata'
  | 'fetchTopicOffsets'
  | 'fetchTopicOffsetsByTimestamp'
  | 'fetchOffsets'
  | 'setOffsets'
  | 'describeCluster'
  | 'describeConfigs'
  | 'describeGroups'
  | 'deleteGroups'
>;

/** The consumer of the offline trigger, the dead-letter reader and recovery's reads of a range. */
export type KafkaConsumer = Pick<Consumer, 'connect' | 'disconnect' | 'subscribe' | 'run' | 'stop' | 'seek' | 'pause' | 'resume' | 'commitOffsets' | 'on'>;

/** What the framework opens on a cluster: producers, an admin, consumers. */
export interface KafkaClient {
  producer(config?: ProducerConfig): KafkaProducer;
  admin(): KafkaAdmin;
  consumer(config: ConsumerConfig): KafkaConsumer;
}

/** What a writer needs of a client: a producer factory. */
export type ProducerFactory = Pick<KafkaClient, 'producer'>;

/**
 * A client of the implementation in use (kafkajs), loaded on the first call (see `importKafkaJs`), logging as every
 * client of the framework does (`kafkaLogCreator`: a coordinator or leader moving is a retried warning) unless the
 * config names a logger of its own.
 *
 * @example
 * const client = await createKafkaClient({ ...(await kafkaClientConfig(options.kafka, bootstrapServers)), logLevel: 1 });
 * const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 });
 */
export async function createKafkaClient(config: KafkaConfig): Promise<KafkaClient> {
  const { Kafka } = await importKafkaJs();
  return new Kafka({ logCreator: kafkaLogCreator, ...config });
}
