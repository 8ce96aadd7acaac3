import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { createTopicsReady } from '../../src/admin';
import { createKafka, deleteTopics, uniqueName } from './support/stack';

describe('createTopicsReady on the real broker (KRaft)', () => {
  let admin: Admin;
  const created: string[] = [];
  beforeAll(async () => {
    admin = createKafka().admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin.disconnect();
    await deleteTopics(created);
  });

  it('creates topics that a producer without retries can write to at once, on every partition', async () => {
    // Prepare
    const prefix = uniqueName('ready');
    const topics = [`${prefix}.retry.5s`, `${prefix}.retry.1m`, `${prefix}.dlq`];
    created.push(...topics);
    const producer = createKafka().producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
    await producer.connect();

    try {
      // Act
      const result = await createTopicsReady(
        admin,
        topics.map((topic) => ({
          topic,
          numPartitions: 3,
          replicationFactor: 1,
          configEntries: [{ name: 'max.message.bytes', value: '2097152' }],
        })),
        { timeoutMs: 60_000 },
      );

      // Assess: one write per partition, no retry allowed
      expect(result).toEqual({ created: topics, existing: [] });
      const acks = await producer.sendBatch({
        acks: -1,
        topicMessages: topics.map((topic) => ({
          topic,
          messages: [0, 1, 2].map((partition) => ({ partition, key: null, value: `to ${partition}` })),
        })),
      });
      expect(acks.filter((ack) => ack.errorCode === 0)).toHaveLength(9);
      const configs = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topics[0]!, configNames: ['max.message.bytes'] }],
      });
      expect(configs.resources[0]?.configEntries[0]?.configValue).toBe('2097152');
    } finally {
      await producer.disconnect();
    }
  });

  it('reports topics that exist as existing, leaves them as they are, and creates the others', async () => {
    // Prepare
    const old = uniqueName('ready-old');
    const fresh = uniqueName('ready-new');
    created.push(old, fresh);
    await createTopicsReady(admin, [{ topic: old, numPartitions: 2 }]);

    // Act
    const result = await createTopicsReady(admin, [{ topic: fresh, numPartitions: 2 }, { topic: old, numPartitions: 5 }]);

    // Assess
    expect(result).toEqual({ created: [fresh], existing: [old] });
    const metadata = await admin.fetchTopicMetadata({ topics: [old, fresh] });
    expect(Object.fromEntries(metadata.topics.map((t) => [t.name, t.partitions.length]))).toEqual({ [old]: 2, [fresh]: 2 });
  });

  it('is ready for a write right after, round after round', async () => {
    // The flake this guards against appeared under load, one creation in many: several rounds, each written at once.
    const producer = createKafka().producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      for (let round = 0; round < 5; round++) {
        const topic = uniqueName(`ready-round-${round}`);
        created.push(topic);
        await createTopicsReady(admin, [{ topic, numPartitions: 4 }]);
        const acks = await producer.send({ topic, acks: -1, messages: [0, 1, 2, 3].map((partition) => ({ partition, value: 'x' })) });
        expect(acks).toHaveLength(4);
      }
    } finally {
      await producer.disconnect();
    }
  });
});
