import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { COPY_HEADROOM_BYTES, describeTopics, ensureTopics, RETENTION_HEADROOM_MS } from '../../../src/admin';
import { ConfigError } from '../../../src/errors';
import { runCliCaptured as cli } from '../support/cli';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from '../support/stack';

const created: string[] = [];

function derivedNames(group: string, tiers: readonly string[]): string[] {
  return [...tiers.map((tier) => `${group}.retry.${tier}`), `${group}.dlq`];
}

describe('kafka-lanes topics ensure on the real broker', () => {
  let admin: Admin;

  beforeAll(async () => {
    admin = createKafka().admin();
    await admin.connect();
  });

  afterAll(async () => {
    await admin.disconnect();
    await deleteTopics(created);
  });

  it('creates the source, retry and dead-letter topics, each writable at once', async () => {
    // Prepare
    const group = uniqueName('ensure');
    const source = uniqueName('orders');
    created.push(source, ...derivedNames(group, ['1s', '1m']));

    // Act
    const result = await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 3 }], tiers: ['1s', '1m'] });

    // Assess
    expect(result.actions.map((action) => [action.kind, action.topic])).toEqual([
      ['create', source],
      ['create', `${group}.retry.1s`],
      ['create', `${group}.retry.1m`],
      ['create', `${group}.dlq`],
    ]);
    const states = await describeTopics(admin, [source, ...derivedNames(group, ['1s', '1m'])]);
    const sourceBytes = states.get(source)?.maxMessageBytes ?? 0;
    for (const topic of derivedNames(group, ['1s', '1m'])) {
      expect(states.get(topic)).toMatchObject({ partitions: 3, cleanupPolicy: 'delete' });
      expect(states.get(topic)?.retentionMs).toBeGreaterThan(60_000 + RETENTION_HEADROOM_MS - 1);
      expect(states.get(topic)?.maxMessageBytes).toBe(sourceBytes + COPY_HEADROOM_BYTES);
    }
    // Writable right away on every partition: the wait covered KRaft's UNKNOWN_TOPIC_OR_PARTITION moment.
    const producer = createKafka().producer();
    await producer.connect();
    try {
      for (const topic of [source, ...derivedNames(group, ['1s', '1m'])]) {
        await producer.send({ topic, acks: -1, messages: [0, 1, 2].map((partition) => ({ partition, value: 'x' })) });
      }
    } finally {
      await producer.disconnect();
    }
  });

  it('checks existing topics again without changing them, and grows a source asked for more partitions', async () => {
    // Prepare
    const group = uniqueName('ensure');
    const source = uniqueName('orders');
    created.push(source, ...derivedNames(group, ['5s']));
    await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 2 }], tiers: ['5s'] });

    // Act
    const again = await ensureTopics(admin, { group, topics: [{ topic: source }], tiers: ['5s'] });
    const grown = await ensureTopics(admin, { group, topics: [{ topic: source, partitions: 4 }], tiers: ['5s'] });

    // Assess
    expect(again.actions.every((action) => action.kind === 'ok')).toBe(true);
    expect(grown.actions[0]).toEqual({ kind: 'add-partitions', role: 'source', topic: source, from: 2, to: 4 });
    expect((await describeTopics(admin, [source])).get(source)?.partitions).toBe(4);
    await expect(ensureTopics(admin, { group, topics: [{ topic: source, partitions: 3 }], tiers: ['5s'] })).rejects.toThrow(
      /has 4 partitions, asked for 3: Kafka cannot remove partitions/,
    );
  });

  it('sizes retry topics for the largest source record plus the lanes-* headers', async () => {
    // Prepare: a source that accepts 2 MB records
    const group = uniqueName('ensure');
    const source = uniqueName('big');
    created.push(source, ...derivedNames(group, ['5s']));
    await admin.createTopics({
      topics: [{ topic: source, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '2000000' }] }],
    });

    // Act
    await ensureTopics(admin, { group, topics: [{ topic: source }], tiers: ['5s'] });

    // Assess
    const states = await describeTopics(admin, derivedNames(group, ['5s']));
    expect(states.get(`${group}.retry.5s`)?.maxMessageBytes).toBe(2_000_000 + COPY_HEADROOM_BYTES);
    expect(states.get(`${group}.dlq`)?.maxMessageBytes).toBe(2_000_000 + COPY_HEADROOM_BYTES);
  });

  it('refuses a retry topic that would lose or refuse copies, and changes nothing', async () => {
    // Prepare: a 1m tier whose topic keeps records 1 minute, and a 5s tier refusing large records
    const group = uniqueName('ensure');
    const source = uniqueName('orders');
    created.push(source, ...derivedNames(group, ['5s', '1m']));
    await createTopic(source, 1);
    await admin.createTopics({
      topics: [
        { topic: `${group}.retry.1m`, numPartitions: 1, configEntries: [{ name: 'retention.ms', value: '60000' }] },
        { topic: `${group}.retry.5s`, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '1000' }] },
      ],
    });

    // Act
    const attempt = ensureTopics(admin, { group, topics: [{ topic: source }], tiers: ['5s', '1m'] });

    // Assess
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(attempt).rejects.toThrow(/retry topic `.*\.retry\.1m` keeps records 1m .*would lose copies/);
    await expect(attempt).rejects.toThrow(/retry topic `.*\.retry\.5s` accepts records up to 1000 bytes/);
    expect(await admin.listTopics()).not.toContain(`${group}.dlq`);
  });

  it('refuses a compacted dead-letter topic', async () => {
    const group = uniqueName('ensure');
    const source = uniqueName('orders');
    created.push(source, ...derivedNames(group, ['5s']));
    await createTopic(source, 1);
    await admin.createTopics({ topics: [{ topic: `${group}.dlq`, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });

    await expect(ensureTopics(admin, { group, topics: [{ topic: source }], tiers: ['5s'] })).rejects.toThrow(
      /dead-letter topic `.*\.dlq` has `cleanup.policy=compact`/,
    );
  });

  it('runs from the CLI, and names a missing source topic without a partition count', async () => {
    // Prepare
    const group = uniqueName('cli');
    const source = uniqueName('orders');
    const missing = uniqueName('missing');
    created.push(source, ...derivedNames(group, ['2s']));

    // Act
    const ok = await cli('topics', 'ensure', '--group', group, '--topic', `${source}:2`, '--tiers', '2s', '--brokers', KAFKA_BROKERS.join(','));
    const bad = await cli('topics', 'ensure', '--group', group, '--topic', missing, '--brokers', KAFKA_BROKERS.join(','));
    const badCount = await cli('topics', 'ensure', '--group', group, '--topic', `${source}:zero`);

    // Assess
    expect(ok).toMatchObject({ code: 0, err: '' });
    expect(ok.out).toContain(`created  ${source} (source, 2 partitions)`);
    expect(ok.out).toContain(`created  ${group}.retry.2s (retry, 2 partitions, retention.ms=604800000`);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain(`Source topic \`${missing}\` does not exist; give \`${missing}:<partitions>\` to create it`);
    expect(badCount.code).toBe(1);
    expect(badCount.err).toContain('with a positive integer of partitions, got `');
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: `${group}.dlq`, configNames: ['retention.ms'] }],
    });
    expect(configs.resources[0]?.configEntries[0]?.configValue).toBe('604800000');
  });
});

describe('kafka-lanes topics ensure --help', () => {
  it('lists every option', async () => {
    const { out, code } = await cli('topics', 'ensure', '--help');
    expect(code).toBe(0);
    for (const option of ['--group', '--topic', '--tiers', '--retry-partitions', '--retention-ms', '--replication-factor', '--brokers']) {
      expect(out).toContain(option);
    }
  });
});
