/**
 * The local stack answers: a real kafkajs round trip, Redis on 6379, and the Redis Cluster with keys
 * on all three masters. When this fails, run `npm run local:status` / `npm run local:up` first.
 */
import { Cluster, Redis } from 'ioredis';
import type { Consumer, KafkaMessage } from 'kafkajs';
import {
  REDIS_CLUSTER_NODES,
  REDIS_URL,
  createKafka,
  createTopic,
  deleteTopics,
  redisSetups,
  uniqueName,
} from './support/stack';

describe('local Kafka broker', () => {
  const topic = uniqueName('local-stack');
  let consumer: Consumer | undefined;

  afterAll(async () => {
    await consumer?.disconnect();
    await deleteTopics([topic]);
  });

  it('creates a 3-partition topic and round-trips a record with a header', async () => {
    // Prepare
    await createTopic(topic, 3);
    const kafka = createKafka();
    const admin = kafka.admin();
    await admin.connect();
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
    await admin.disconnect();
    expect(metadata?.partitions).toHaveLength(3);

    consumer = kafka.consumer({ groupId: uniqueName('local-stack-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received = new Promise<{ partition: number; message: KafkaMessage }>((resolve) => {
      void consumer?.run({
        eachMessage: async ({ partition, message }) => resolve({ partition, message }),
      });
    });

    // Act
    const producer = kafka.producer();
    await producer.connect();
    const [ack] = await producer.send({
      topic,
      acks: -1,
      messages: [{ key: 'k1', value: 'hello', partition: 2, headers: { origin: `${topic}:2:0` } }],
    });
    await producer.disconnect();
    const { partition, message } = await received;

    // Assess
    expect(ack).toMatchObject({ topicName: topic, partition: 2, errorCode: 0 });
    expect(partition).toBe(2);
    expect(message.key?.toString()).toBe('k1');
    expect(message.value?.toString()).toBe('hello');
    expect(message.headers?.['origin']?.toString()).toBe(`${topic}:2:0`);
  });
});

describe('local Redis', () => {
  it('answers on 6379', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const key = uniqueName('local-stack');
      await redis.set(key, 'v', 'EX', 60);
      expect(await redis.ping()).toBe('PONG');
      expect(await redis.get(key)).toBe('v');
    } finally {
      await redis.quit();
    }
  });
});

describe('local Redis Cluster', () => {
  let cluster: Cluster;

  beforeAll(() => {
    cluster = new Redis.Cluster(REDIS_CLUSTER_NODES.map((node) => ({ ...node })));
  });

  afterAll(async () => {
    await cluster.quit();
  });

  it('has three masters and stores a key on each of them', async () => {
    // Prepare: map each master's port to a key whose hash slot it owns.
    const slots = await cluster.cluster('SLOTS');
    const ownerOf = (slot: number): number | undefined =>
      slots.find(([start, end]) => slot >= start && slot <= end)?.[2]?.[1];
    const masterPorts = new Set(slots.map((range) => range[2]?.[1]));
    expect([...masterPorts].sort()).toEqual(REDIS_CLUSTER_NODES.map((node) => node.port));

    const prefix = uniqueName('local-stack');
    const keyByPort = new Map<number, string>();
    for (let i = 0; keyByPort.size < masterPorts.size && i < 1000; i += 1) {
      const key = `${prefix}:{${i}}`;
      const port = ownerOf(await cluster.cluster('KEYSLOT', key));
      if (port !== undefined && !keyByPort.has(port)) keyByPort.set(port, key);
    }
    expect(keyByPort.size).toBe(3);

    // Act
    for (const [port, key] of keyByPort) await cluster.set(key, String(port), 'EX', 60);

    // Assess: through the cluster client, and on the owning node itself.
    for (const [port, key] of keyByPort) {
      expect(await cluster.get(key)).toBe(String(port));
      const node = new Redis({ host: '127.0.0.1', port });
      try {
        expect(await node.get(key)).toBe(String(port));
      } finally {
        await node.quit();
      }
    }
  });
});

describe.each(redisSetups())('$name Redis from redisSetups()', ({ connect }) => {
  it('round-trips a key', async () => {
    const redis = connect();
    try {
      const key = uniqueName('local-stack');
      await redis.set(key, 'v', 'EX', 60);
      expect(await redis.get(key)).toBe('v');
    } finally {
      await redis.quit();
    }
  });
});
