import { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, KafkaJSTimeout, type ITopicConfig } from 'kafkajs';
import { createTopicsReady, notReady, TopicsNotReadyError, waitForTopicsReady, type TopicsAdmin } from '../../../src/admin';
import { ConfigError } from '../../../src/errors';

/** What kafkajs throws for Kafka error `type` / `code` (its types leave the fields out of the constructor). */
const kafkaError = (type: string, code: number, message = type): Error =>
  new KafkaJSProtocolError({ type, code, message, retriable: true } as unknown as Error);

/** What kafkajs' retrier throws once its retries ran out (its types leave the second argument out). */
const retriesExceeded = (cause: Error): Error =>
  new (KafkaJSNumberOfRetriesExceeded as unknown as new (e: Error, meta: { retryCount: number; retryTime: number }) => Error)(cause, {
    retryCount: 5,
    retryTime: 100,
  });

const partition = (partitionId: number, leader = 1, partitionErrorCode = 0) => ({
  partitionId,
  leader,
  partitionErrorCode,
  replicas: [1],
  isr: leader < 0 ? [] : [1],
  offlineReplicas: [],
});
type Metadata = Awaited<ReturnType<TopicsAdmin['fetchTopicMetadata']>>;

/**
 * A kafkajs admin over a broker whose answers the test scripts: `createTopics`, `fetchTopicMetadata` and
 * `fetchTopicOffsets` take their next answer from a queue (an error to throw, metadata, or `undefined` for a
 * plain success), then keep giving the last one.
 */
function fakeAdmin(options: {
  existing?: string[];
  create?: Array<Error | undefined>;
  metadata?: Array<Error | Metadata>;
  offsets?: Array<Error | undefined>;
  list?: Array<Error | undefined>;
  /** `createTopics` never answers. */
  hang?: boolean;
}) {
  const topics = new Set(options.existing);
  const creates = [...(options.create ?? [])];
  const readings = [...(options.metadata ?? [])];
  const offsets = [...(options.offsets ?? [])];
  const lists = [...(options.list ?? [])];
  const next = <T>(queue: T[]): T | undefined => (queue.length > 1 ? queue.shift() : queue[0]);
  const admin = {
    listTopics: jest.fn(async () => {
      const answer = next(lists);
      if (answer !== undefined) throw answer;
      return [...topics];
    }),
    createTopics: jest.fn(async ({ topics: asked }: { topics: ITopicConfig[] }) => {
      if (options.hang === true) await new Promise(() => undefined);
      // The topics exist once asked for, whatever kafkajs' leader wait then answers.
      for (const { topic } of asked) topics.add(topic);
      const answer = next(creates);
      if (answer !== undefined) throw answer;
      return true;
    }),
    fetchTopicMetadata: jest.fn(async () => {
      const answer = next(readings);
      if (answer === undefined) throw new Error('no metadata scripted');
      if (answer instanceof Error) throw answer;
      return answer;
    }),
    fetchTopicOffsets: jest.fn(async () => {
      const answer = next(offsets);
      if (answer !== undefined) throw answer;
      return [{ partition: 0, offset: '0', high: '0', low: '0' }];
    }),
  };
  return admin;
}

const ready = (name: string, partitions: number): Metadata => ({
  topics: [{ name, partitions: Array.from({ length: partitions }, (_, i) => partition(i)) }],
});

describe('createTopicsReady', () => {
  it("waits out KRaft's UNKNOWN_TOPIC_OR_PARTITION right after the creation, then leaderless metadata", async () => {
    // Prepare: the flake seen under load: kafkajs' leader wait fails though the topic was created
    const admin = fakeAdmin({
      create: [kafkaError('UNKNOWN_TOPIC_OR_PARTITION', 3, 'This server does not host this topic-partition')],
      metadata: [
        kafkaError('UNKNOWN_TOPIC_OR_PARTITION', 3),
        { topics: [{ name: 'orders.retry.5s', partitions: [partition(0), partition(1, -1, 5)] }] },
        ready('orders.retry.5s', 2),
      ],
    });

    // Act
    const result = await createTopicsReady(admin, [{ topic: 'orders.retry.5s', numPartitions: 2 }]);

    // Assess
    expect(result).toEqual({ created: ['orders.retry.5s'], existing: [] });
    expect(admin.createTopics).toHaveBeenCalledTimes(1);
    expect(admin.fetchTopicMetadata).toHaveBeenCalledTimes(3);
  });

  it('waits until every named leader serves its partition (NOT_LEADER_OR_FOLLOWER on reading offsets)', async () => {
    const notLeader = kafkaError('NOT_LEADER_FOR_PARTITION', 6, 'This server is not the leader for that topic-partition');
    const admin = fakeAdmin({ metadata: [ready('a', 1)], offsets: [notLeader, notLeader, undefined] });
    await expect(createTopicsReady(admin, [{ topic: 'a' }])).resolves.toEqual({ created: ['a'], existing: [] });
    expect(admin.fetchTopicOffsets).toHaveBeenCalledTimes(3);
  });

  it('keeps waiting when kafkajs gives its leader wait up, or its retries run out', async () => {
    const admin = fakeAdmin({
      create: [new (KafkaJSTimeout as unknown as new (message: string) => Error)('Timed out while waiting for topic leaders')],
      metadata: [
        retriesExceeded(kafkaError('LEADER_NOT_AVAILABLE', 5)),
        ready('a', 1),
      ],
    });
    await expect(createTopicsReady(admin, [{ topic: 'a' }])).resolves.toEqual({ created: ['a'], existing: [] });
  });

  it('creates only the missing topics and still waits for the leaders of all of them', async () => {
    // Prepare
    const admin = fakeAdmin({
      existing: ['old'],
      metadata: [
        { topics: [...ready('old', 1).topics, { name: 'new', partitions: [partition(0)] }] }, // 1 of 3 partitions yet
        { topics: [...ready('old', 1).topics, ...ready('new', 3).topics] },
      ],
    });

    // Act
    const result = await createTopicsReady(admin, [{ topic: 'new', numPartitions: 3 }, { topic: 'old' }]);

    // Assess
    expect(result).toEqual({ created: ['new'], existing: ['old'] });
    expect(admin.createTopics.mock.calls[0]?.[0].topics.map((t: ITopicConfig) => t.topic)).toEqual(['new']);
    expect(admin.createTopics.mock.calls[0]?.[0]).toMatchObject({ waitForLeaders: true });
  });

  it("waits out kafkajs' TypeError when no broker answered the cluster's metadata (listTopics)", async () => {
    const quirk = new TypeError("Cannot destructure property 'topicMetadata' of '(intermediate value)' as it is null.");
    const admin = fakeAdmin({ list: [quirk, undefined], metadata: [ready('a', 1)] });
    await expect(createTopicsReady(admin, [{ topic: 'a' }])).resolves.toEqual({ created: ['a'], existing: [] });
    expect(admin.listTopics).toHaveBeenCalledTimes(2);
  });

  it('gives up at timeoutMs even while a Kafka request is still unanswered', async () => {
    const admin = fakeAdmin({ hang: true, metadata: [ready('a', 1)] });
    await expect(createTopicsReady(admin, [{ topic: 'a' }], { timeoutMs: 200 })).rejects.toThrow(
      'Topics `a` not ready within 200 ms: a Kafka request was still unanswered at the deadline',
    );
  });

  it('gives up at timeoutMs with a TopicsNotReadyError naming what is missing', async () => {
    const admin = fakeAdmin({ metadata: [{ topics: [{ name: 'a', partitions: [partition(0, -1)] }] }] });
    const error = await createTopicsReady(admin, [{ topic: 'a' }], { timeoutMs: 250 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TopicsNotReadyError);
    expect(error).toMatchObject({
      retriable: true,
      topics: ['a'],
      message: 'Topics `a` not ready within 250 ms: a: no leader for partition(s) 0',
    });
  });

  it('throws any other Kafka error at once', async () => {
    const refusal = kafkaError('INVALID_REPLICATION_FACTOR', 38);
    const admin = fakeAdmin({ create: [refusal], metadata: [ready('a', 1)] });
    await expect(createTopicsReady(admin, [{ topic: 'a', replicationFactor: 3 }])).rejects.toBe(refusal);
    expect(admin.createTopics).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['a zero timeout', [{ topic: 'a' }], { timeoutMs: 0 }, 'Expected `timeoutMs` to be a positive integer, got `0` (number)'],
    ['no topics', [], {}, 'Expected `topics` to be a non-empty array of topic configs, got `[]` (array)'],
    ['a nameless topic', [{ topic: '' }], {}, 'Expected every topic to have a non-empty `topic` name, got `` (string)'],
    ['a topic twice', [{ topic: 'a' }, { topic: 'a' }], {}, 'Expected each topic once, got `a` twice'],
  ])('refuses %s before asking Kafka anything', async (_, topics, options, message) => {
    const admin = fakeAdmin({});
    await expect(createTopicsReady(admin, topics as ITopicConfig[], options)).rejects.toThrow(ConfigError);
    await expect(createTopicsReady(admin, topics as ITopicConfig[], options)).rejects.toThrow(message);
    expect(admin.listTopics).not.toHaveBeenCalled();
  });
});

describe('waitForTopicsReady', () => {
  it('waits until partitions just added show up, led and served', async () => {
    // Prepare: a topic grown from 2 to 4 partitions; the metadata catches up in steps
    const admin = fakeAdmin({ existing: ['orders'], metadata: [ready('orders', 2), ready('orders', 3), ready('orders', 4)] });

    // Act
    await waitForTopicsReady(admin, [{ topic: 'orders', numPartitions: 4 }], { timeoutMs: 30_000 });

    // Assess
    expect(admin.fetchTopicMetadata).toHaveBeenCalledTimes(3);
    expect(admin.fetchTopicOffsets).toHaveBeenCalledWith('orders');
    expect(admin.createTopics).not.toHaveBeenCalled();
  });

  it('takes topic names alone', async () => {
    const admin = fakeAdmin({ metadata: [ready('a', 3)] });
    await expect(waitForTopicsReady(admin, ['a'])).resolves.toBeUndefined();
  });
});

describe('notReady', () => {
  it('is empty when every partition of every topic has a leader', () => {
    expect(notReady([{ topic: 'a', numPartitions: 2 }, { topic: 'b' }], [...ready('a', 2).topics, ...ready('b', 4).topics])).toEqual([]);
  });

  it('names missing topics, missing partitions and leaderless or failing partitions', () => {
    const metadata = [
      { name: 'short', partitions: [partition(0)] },
      { name: 'leaderless', partitions: [partition(2, -1), partition(0), partition(1, 1, 5)] },
    ];
    expect(notReady([{ topic: 'gone' }, { topic: 'short', numPartitions: 3 }, { topic: 'leaderless' }], metadata)).toEqual([
      'gone: not in the metadata',
      'short: 1 of 3 partitions',
      'leaderless: no leader for partition(s) 1, 2',
    ]);
  });

  it('takes an existing topic with the partitions it has', () => {
    expect(notReady([{ topic: 'old', numPartitions: 6 }], ready('old', 2).topics, new Set(['old']))).toEqual([]);
  });
});
