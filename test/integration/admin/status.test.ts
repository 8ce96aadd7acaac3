import type { Admin } from 'kafkajs';
import { readStatus, renderStatus, type GroupStatus } from '../../../src/admin';
import { CompletionStore, type RedisClient } from '../../../src/completion';
import { runCliCaptured } from '../support/cli';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, REDIS_CLUSTER_NODES, REDIS_URL, redisSetups, uniqueName } from '../support/stack';

const created: string[] = [];

async function produce(topic: string, partition: number, count: number): Promise<void> {
  const producer = createKafka().producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ partition, key: `k${i}`, value: 'v' })) });
  } finally {
    await producer.disconnect();
  }
}

const REDIS_FLAGS = {
  standalone: ['--redis-url', REDIS_URL],
  cluster: ['--redis-cluster-nodes', REDIS_CLUSTER_NODES.map((node) => `${node.host}:${node.port}`).join(',')],
};

describe.each(redisSetups())('kafka-lanes status on $name Redis', ({ name, connect }) => {
  let admin: Admin;
  let redis: RedisClient;

  beforeAll(async () => {
    admin = createKafka().admin();
    await admin.connect();
    redis = connect();
  });

  afterAll(async () => {
    await admin.disconnect();
    await redis.quit();
    await deleteTopics(created);
  });

  it('shows committed, frontier, window, lag, blocked lanes, parked records, retry depth and dead letters', async () => {
    // Prepare: 10 records on partition 1 of a 2-partition source; 0-3 and 5 done, 4 failed (lane `a` blocked,
    // 6 parked behind it); the completion group at 4; one copy in the 1s tier, two dead letters.
    const group = uniqueName('status');
    const source = uniqueName('orders');
    const [retry, dlq] = [`${group}.retry.1s`, `${group}.dlq`];
    created.push(source, retry, dlq);
    await createTopic(source, 2);
    await createTopic(retry, 1);
    await createTopic(dlq, 1);
    await produce(source, 1, 10);
    await produce(retry, 0, 1);
    await produce(dlq, 0, 2);
    const store = new CompletionStore(redis);
    const ref = { group, topic: source, partition: 1 };
    await store.admit(ref, [0, 1, 2, 3, 4, 5, 6, 7].map((offset) => ({ offset, lane: offset === 4 || offset === 6 ? 'a' : `l${offset}` })));
    await store.markDone(ref, [0, 1, 2, 3, 5]);
    await store.block(ref, { head: { lane: 'a', offset: 4, attempt: 2, state: 'retrying' }, parked: [{ offset: 6, payload: 'p6' }] });
    await store.markDone(ref, [4]);
    await admin.setOffsets({ groupId: `${group}.lanes`, topic: source, partitions: [{ partition: 1, offset: '4' }] });

    // Act
    const status = await readStatus({ group, admin, store: new CompletionStore(redis) });

    // Assess
    const row = (topic: string, partition: number) => status.partitions.find((p) => p.topic === topic && p.partition === partition);
    expect(row(source, 1)).toEqual({
      topic: source,
      partition: 1,
      role: 'source',
      committed: 4,
      frontier: 7,
      highest: 7,
      window: 1,
      endOffset: 10,
      startOffset: 0,
      lag: 6,
      blockedLanes: 1,
      heldLanes: 0,
      parked: 1,
      recoveries: 0,
      lastRecoveredAtMs: undefined,
      recovering: false,
    });
    // Partition 0 has nothing in Redis and nothing committed, yet it is shown: it is a partition of a source topic.
    expect(row(source, 0)).toMatchObject({ role: 'source', committed: undefined, frontier: undefined, endOffset: 0, lag: 0 });
    expect(row(retry, 0)).toMatchObject({ role: 'retry', endOffset: 1, lag: 1 });
    expect(row(dlq, 0)).toMatchObject({ role: 'dead-letter', endOffset: 2 });
    expect(status).toMatchObject({ retryDepth: 1, deadLetters: 2, missingTopics: [], completionGroup: `${group}.lanes` });
    const text = renderStatus(status);
    expect(text).toMatch(new RegExp(`${source}\\s+1\\s+source\\s+4\\s+7\\s+1\\s+10\\s+6\\s+1\\s+0\\s+1`));
    expect(text).toContain('blocked lanes 1 (held 0), parked 1, retry depth 1, dead letters 2');

    // The same through the CLI, as JSON for scripts.
    const cli = await runCliCaptured('status', group, '--json', '--brokers', KAFKA_BROKERS.join(','), ...REDIS_FLAGS[name]);
    expect(cli.err).toBe('');
    expect(cli.code).toBe(0);
    const json = JSON.parse(cli.out) as GroupStatus;
    expect(json.partitions.find((p) => p.topic === source && p.partition === 1)).toMatchObject({ frontier: 7, committed: 4, parked: 1 });
    // Each blocked lane, with the id `lane release` and `dlq replay --lane` take.
    expect(json.lanes).toEqual({
      total: 1,
      lanes: [expect.objectContaining({ lane: 'a', topic: source, partition: 1, headOffset: 4, attempt: 2, state: 'retrying', parked: 1, ageMs: expect.any(Number) })],
    });
    const table = await runCliCaptured('status', group, '--brokers', KAFKA_BROKERS.join(','), ...REDIS_FLAGS[name]);
    expect(table.out).toContain('blocked and held lanes (oldest first, 1 of 1):');
    expect(table.out).toMatch(/LANE\s+KEY\s+TOPIC\s+PART\s+STATE\s+HEAD\s+ATTEMPT\s+PARKED\s+AGE\s+REASON/);
    expect(table.out).toMatch(new RegExp(`\\na\\s+\\S.*\\s+${source}\\s+1\\s+retrying\\s+4\\s+2\\s+1\\s+`));
  });

  it("counts parked records once: a partition's parked is the sum of its lanes', a retrying head kept in its park list not counted", async () => {
    // Prepare: lane `a` blocked on 4 with 6, 8 and 9 parked, then released onto 6, which is its head now (retrying,
    // its payload kept first in the park list) with 8 and 9 parked behind it; lane `b` blocked on 5 with 7 parked.
    const group = uniqueName('status-parked');
    const source = uniqueName('orders');
    created.push(source);
    await createTopic(source, 1);
    await produce(source, 0, 10);
    const store = new CompletionStore(redis);
    const ref = { group, topic: source, partition: 0 };
    const lanes: Record<number, string> = { 4: 'a', 6: 'a', 8: 'a', 9: 'a', 5: 'b', 7: 'b' };
    await store.admit(ref, Array.from({ length: 10 }, (_, offset) => ({ offset, lane: lanes[offset] ?? `l${offset}` })));
    await store.markDone(ref, [0, 1, 2, 3]);
    await store.block(ref, { head: { lane: 'a', offset: 4, attempt: 2, state: 'retrying' }, parked: [6, 8, 9].map((offset) => ({ offset, payload: `p${offset}` })) });
    await store.block(ref, { head: { lane: 'b', offset: 5, attempt: 2, state: 'retrying' }, parked: [{ offset: 7, payload: 'p7' }] });
    expect(await store.release(ref, { lane: 'a', headOffset: 4, nextAttempt: 1 })).toMatchObject({ offset: 6 });

    // Act
    const status = await readStatus({ group, admin, store, lanes: { limit: 10 } });
    const cli = await runCliCaptured('status', group, '--json', '--brokers', KAFKA_BROKERS.join(','), ...REDIS_FLAGS[name]);

    // Assess: the lanes' rows, the partition's row, and the same in --json.
    const partition = status.partitions.find((p) => p.topic === source && p.partition === 0)!;
    expect(status.lanes?.lanes.map((lane) => [lane.lane, lane.headOffset, lane.parked]).sort()).toEqual([['a', 6, 2], ['b', 5, 1]]);
    expect(partition.parked).toBe(3);
    expect(partition.parked).toBe(status.lanes!.lanes.reduce((sum, lane) => sum + lane.parked, 0));
    expect(renderStatus(status)).toContain('blocked lanes 2 (held 0), parked 3,');
    expect(cli.code).toBe(0);
    const json = JSON.parse(cli.out) as GroupStatus;
    expect(json.partitions.find((p) => p.topic === source)?.parked).toBe(3);
    expect(json.lanes?.lanes.reduce((sum, lane) => sum + lane.parked, 0)).toBe(3);
  });

  it('names topics whose completion state outlived them in Kafka', async () => {
    const group = uniqueName('status');
    const gone = uniqueName('gone');
    await new CompletionStore(redis).admit({ group, topic: gone, partition: 0 }, [{ offset: 0 }]);

    const status = await readStatus({ group, admin, store: new CompletionStore(redis) });

    expect(status.missingTopics).toEqual([gone]);
    expect(status.partitions).toEqual([expect.objectContaining({ topic: gone, frontier: 0, endOffset: undefined, lag: undefined })]);
    expect(renderStatus(status)).toContain(`missing from Kafka: ${gone}`);
  });
});

describe('kafka-lanes status --help', () => {
  it('lists every option', async () => {
    const { out, code } = await runCliCaptured('status', '--help');
    expect(code).toBe(0);
    for (const option of ['--json', '--watch', '--interval', '--lanes', '--brokers', '--redis-url', '--redis-cluster-nodes']) expect(out).toContain(option);
  });
});
