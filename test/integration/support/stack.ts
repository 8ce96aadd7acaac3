/**
 * The local stack the integration tests talk to (`npm run local:up`, `kafka-lanes local up` in src/cli/local/stack.ts):
 * Kafka on 127.0.0.1:9092, Redis on 127.0.0.1:6379 and a 3-master Redis Cluster on 127.0.0.1:7000-7002.
 *
 * Tests share one stack, so each test names its own topics, groups and keys with `uniqueName` and
 * never depends on what another test left behind.
 */
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { createTopicsReady } from '../../../src/admin';

// `LOCAL_KAFKA_PORT` (as for `npm run local:up`) runs the suite against a second broker, e.g. another Kafka version.
export const KAFKA_BROKERS = [`127.0.0.1:${process.env['LOCAL_KAFKA_PORT'] ?? '9092'}`];
export const REDIS_URL = 'redis://127.0.0.1:6379';
export const REDIS_CLUSTER_NODES = [
  { host: '127.0.0.1', port: 7000 },
  { host: '127.0.0.1', port: 7001 },
  { host: '127.0.0.1', port: 7002 },
] as const;

/**
 * A name no other test run uses: `<prefix>-<time>-<random>`, valid as a Kafka topic, group id or
 * Redis key prefix.
 *
 * @example
 * const topic = uniqueName('orders');   // 'orders-m3x1k2-9f0c1a2b'
 */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * A kafkajs client for the local broker; logs errors only (kafkajs is noisy at INFO).
 *
 * @example
 * const producer = createKafka().producer();
 */
export function createKafka(clientId: string = uniqueName('test')): Kafka {
  return new Kafka({ clientId, brokers: KAFKA_BROKERS, logLevel: logLevel.ERROR });
}

/**
 * Creates a topic (with topic configs, if given) and waits until Kafka's metadata shows a leader for every
 * partition, so a produce right after succeeds: through `createTopicsReady`, which waits out the
 * `UNKNOWN_TOPIC_OR_PARTITION` a KRaft broker may answer right after the creation (kafkajs does not).
 *
 * @example
 * const topic = uniqueName('orders');
 * await createTopic(topic, 3);
 * await createTopic(uniqueName('small'), 1, { 'max.message.bytes': '4096' });
 */
export async function createTopic(name: string, partitions: number, config: Readonly<Record<string, string>> = {}): Promise<void> {
  const admin = createKafka().admin();
  await admin.connect();
  try {
    const configEntries = Object.entries(config).map(([key, value]) => ({ name: key, value }));
    const { existing } = await createTopicsReady(
      admin,
      [{ topic: name, numPartitions: partitions, replicationFactor: 1, configEntries }],
      { timeoutMs: 60_000 },
    );
    if (existing.length > 0) throw new Error(`Expected topic \`${name}\` not to exist yet, but it does`);
  } finally {
    await admin.disconnect();
  }
}

/** Deletes topics made by a test; missing topics are not an error. */
export async function deleteTopics(names: readonly string[]): Promise<void> {
  const admin = createKafka().admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const topics = names.filter((name) => existing.has(name));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

/** A Redis deployment the code must work on, for `describe.each(redisSetups())`. */
export interface RedisSetup {
  readonly name: 'standalone' | 'cluster';
  /** A new connection; the caller closes it with `quit()`. */
  readonly connect: () => Redis | Cluster;
}

/**
 * Both Redis deployments: standalone on 6379 and the cluster on 7000-7002. Code that runs Lua or
 * multi-key commands must pass on both (keys of one script need one hash slot on the cluster).
 *
 * @example
 * describe.each(redisSetups())('completion bitmap on $name Redis', ({ connect }) => {
 *   let redis: Redis | Cluster;
 *   beforeAll(() => { redis = connect(); });
 *   afterAll(async () => { await redis.quit(); });
 * });
 */
export function redisSetups(): RedisSetup[] {
  return [
    { name: 'standalone', connect: () => new Redis(REDIS_URL, { maxRetriesPerRequest: 3 }) },
    {
      name: 'cluster',
      connect: () =>
        new Redis.Cluster(
          REDIS_CLUSTER_NODES.map((node) => ({ ...node })),
          { redisOptions: { maxRetriesPerRequest: 3 } },
        ),
    },
  ];
}
