import { Kafka, type Admin } from 'kafkajs';
import {
  CommitNotAppliedError,
  GroupHasMembersError,
  KafkaInternalsChangedError,
  LeaseLostError,
  OffsetCommitError,
  OffsetFetchRefusedError,
  TopicMissingError,
} from '../../../src/committer/errors';
import { clusterFactoryOf, parseOffsetCommitResponse, type OffsetCommitRequest } from '../../../src/committer/kafkajs-internals';
import {
  MemberlessOffsetCommitter,
  checkAcks,
  commitFailure,
  offsetCommitRequest,
  commitRetryDelayMs,
} from '../../../src/committer/memberless-committer';
import type { CommitMove } from '../../../src/committer/types';
import { ConfigError } from '../../../src/errors';

const move = (topic: string, partition: number, from: number | undefined, to: number): CommitMove => ({
  topic,
  partition,
  from,
  to,
});

/** An error as kafkajs throws it for a Kafka error code (a `KafkaJSProtocolError`). */
const kafkaError = (type: string, code: number, retriable = false) =>
  Object.assign(new Error(`kafka said ${type}`), { name: 'KafkaJSProtocolError', type, code, retriable });

/** The decoded reply of kafkajs' `broker.offsetCommit` acknowledging every partition of `request`. */
const ackAll = (request: OffsetCommitRequest) => ({
  throttleTime: 0,
  responses: request.topics.map(({ topic, partitions }) => ({
    topic,
    partitions: partitions.map(({ partition }) => ({ partition, errorCode: 0 })),
  })),
});

/** A kafkajs cluster double that records the order of what it was asked. */
function fakeCluster() {
  const steps: string[] = [];
  const coordinator = {
    offsetCommit: jest.fn(async (request: OffsetCommitRequest): Promise<unknown> => {
      steps.push('offsetCommit');
      return ackAll(request);
    }),
  };
  const cluster = {
    steps,
    coordinator,
    connect: jest.fn(async () => void steps.push('connect')),
    disconnect: jest.fn(async () => void steps.push('disconnect')),
    addMultipleTargetTopics: jest.fn(async (topics: string[]) => void steps.push(`metadata ${topics.join(',')}`)),
    findGroupCoordinator: jest.fn(async (_: { groupId: string }): Promise<unknown> => {
      steps.push('findGroupCoordinator');
      return coordinator;
    }),
  };
  return cluster;
}

/**
 * A kafkajs admin double for `fetchCommitted`: it lists `topics`; asked for another by name, it answers as Kafka
 * does, `TOPIC_AUTHORIZATION_FAILED` for one of `refused` (which Kafka leaves out of a listing), else
 * `UNKNOWN_TOPIC_OR_PARTITION`.
 */
function fakeAdmin(topics: string[], refused: string[] = []) {
  return {
    connect: jest.fn(async () => undefined),
    disconnect: jest.fn(async () => undefined),
    listTopics: jest.fn(async () => topics),
    fetchTopicMetadata: jest.fn(async ({ topics: asked }: { topics: string[] }) => {
      const topic = asked[0]!;
      if (refused.includes(topic)) throw Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), { type: 'TOPIC_AUTHORIZATION_FAILED', code: 29 });
      throw Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION', code: 3 });
    }),
    fetchOffsets: jest.fn(async ({ topics: asked = [] }: { groupId: string; topics?: string[] }) =>
      asked.map((topic) => ({ topic, partitions: [{ partition: 0, offset: '5', metadata: null }] })),
    ),
  };
}

/**
 * A `Kafka` double: its cluster factory sits under a Symbol of its own with kafkajs' description, as
 * the committer finds it by description, never by identity.
 */
function fakeKafka(cluster: unknown = fakeCluster(), admin = fakeAdmin([])) {
  const createCluster = jest.fn((_: { allowAutoTopicCreation: boolean }) => cluster);
  const kafka = { admin: () => admin as unknown as Admin, [Symbol('private:Kafka:createCluster')]: createCluster };
  return { kafka, createCluster, admin };
}

const quick = { retries: 2, initialRetryMs: 1, maxRetryMs: 2 };

describe('offsetCommitRequest', () => {
  it('commits all topics at once as no member: generation -1, empty member id, offsets as strings', () => {
    expect(offsetCommitRequest('orders.lanes', [move('a', 1, 0, 5), move('b', 0, undefined, 0), move('a', 0, 3, 4)])).toEqual({
      groupId: 'orders.lanes',
      groupGenerationId: -1,
      memberId: '',
      retentionTime: -1,
      topics: [
        {
          topic: 'a',
          partitions: [
            { partition: 1, offset: '5' },
            { partition: 0, offset: '4' },
          ],
        },
        { topic: 'b', partitions: [{ partition: 0, offset: '0' }] },
      ],
    });
  });

  it('refuses a move that does not go forward', () => {
    expect(() => offsetCommitRequest('g', [move('a', 0, 4, 4)])).toThrow(RangeError);
    expect(() => offsetCommitRequest('g', [move('a', 0, 4, 2)])).toThrow(RangeError);
  });

  it('takes a move back only as a rewind with its marker (a recovery proved a first commit untrue)', () => {
    const rewind = { ...move('a', 0, 4, 2), metadata: 'kl1:ab:9:2', rewind: true as const };
    expect(() => offsetCommitRequest('g', [rewind])).not.toThrow();
    expect(() => offsetCommitRequest('g', [{ ...rewind, metadata: undefined }])).toThrow(RangeError);
  });
});

describe('commitRetryDelayMs', () => {
  const config = { initialRetryMs: 300, maxRetryMs: 30_000 };

  it('doubles per attempt, within 20 % either way', () => {
    expect([0, 1, 2, 3].map((attempt) => commitRetryDelayMs(attempt, config, () => 0.5))).toEqual([300, 600, 1_200, 2_400]);
    expect(commitRetryDelayMs(2, config, () => 0)).toBe(960);
    expect(commitRetryDelayMs(2, config, () => 1)).toBe(1_440);
  });

  it('never waits longer than maxRetryMs', () => {
    expect(commitRetryDelayMs(20, config, () => 1)).toBe(30_000);
  });
});

describe('commitFailure', () => {
  it.each([
    ['UNKNOWN_MEMBER_ID', 25],
    ['ILLEGAL_GENERATION', 22],
    ['REBALANCE_IN_PROGRESS', 27],
    ['FENCED_INSTANCE_ID', 82],
  ])('says the group has live members on %s, naming the group', (type, code) => {
    const error = commitFailure(kafkaError(type, code, true), 'orders.lanes');
    expect(error).toBeInstanceOf(GroupHasMembersError);
    expect(error).toMatchObject({ groupId: 'orders.lanes', kafkaError: type, retriable: false, name: 'GroupHasMembersError' });
    expect(error.message).toMatch(/group orders\.lanes .* has live members/);
  });

  it('finds the Kafka error inside a kafkajs wrapper', () => {
    const wrapped = Object.assign(new Error('wrapped'), { name: 'KafkaJSNonRetriableError', cause: kafkaError('UNKNOWN_MEMBER_ID', 25) });
    expect(commitFailure(wrapped, 'g.lanes')).toBeInstanceOf(GroupHasMembersError);
  });

  it('reports any other Kafka error as an OffsetCommitError, retriable as kafkajs says', () => {
    const error = commitFailure(kafkaError('UNKNOWN_TOPIC_OR_PARTITION', 3, true), 'g.lanes');
    expect(error).toBeInstanceOf(OffsetCommitError);
    expect(error).not.toBeInstanceOf(GroupHasMembersError);
    expect(error).toMatchObject({ kafkaError: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: true });
  });

  it('reports an error without a Kafka code with its message', () => {
    const error = commitFailure(new Error('Connection timeout'), 'g.lanes');
    expect(error).toMatchObject({ name: 'OffsetCommitError', kafkaError: undefined, retriable: false });
    expect(error.message).toBe('the commit to group g.lanes failed: Connection timeout');
  });

  it('leaves the committer\'s own errors as they are', () => {
    const own = new LeaseLostError('lost');
    expect(commitFailure(own, 'g.lanes')).toBe(own);
  });
});

describe('checkAcks', () => {
  const request = offsetCommitRequest('g.lanes', [move('a', 0, undefined, 1), move('a', 1, undefined, 1)]);

  it('passes when every partition is acknowledged without an error', () => {
    expect(() =>
      checkAcks(request, [
        { topic: 'a', partition: 1, errorCode: 0 },
        { topic: 'a', partition: 0, errorCode: 0 },
      ]),
    ).not.toThrow();
  });

  it('throws CommitNotAppliedError for a partition Kafka did not acknowledge', () => {
    expect(() => checkAcks(request, [{ topic: 'a', partition: 0, errorCode: 0 }])).toThrow(CommitNotAppliedError);
    expect(() => checkAcks(request, [{ topic: 'a', partition: 0, errorCode: 0 }])).toThrow(/of a-1$/);
  });

  it('never passes a partition with an error code', () => {
    expect(() =>
      checkAcks(request, [
        { topic: 'a', partition: 0, errorCode: 0 },
        { topic: 'a', partition: 1, errorCode: 25 },
      ]),
    ).toThrow(GroupHasMembersError);
  });
});

describe('the kafkajs internals', () => {
  it('are there in the installed kafkajs (found without connecting)', () => {
    const kafka = new Kafka({ clientId: 'unit', brokers: ['127.0.0.1:1'] });
    expect(() => new MemberlessOffsetCommitter(kafka, 'orders')).not.toThrow();
    expect(() => clusterFactoryOf(kafka)({ allowAutoTopicCreation: false })).not.toThrow();
  });

  it('missing: no cluster factory, or one that is not a function', () => {
    expect(() => new MemberlessOffsetCommitter({ admin: () => ({}) as Admin }, 'orders')).toThrow(KafkaInternalsChangedError);
    expect(() => new MemberlessOffsetCommitter({ admin: () => ({}) as Admin }, 'orders')).toThrow(/kafkajs internals changed: .* 2\.2\.4/);
    const notAFunction = { admin: () => ({}) as Admin, [Symbol('private:Kafka:createCluster')]: 42 };
    expect(() => new MemberlessOffsetCommitter(notAFunction, 'orders')).toThrow(KafkaInternalsChangedError);
  });

  it('changed: a cluster without one of its methods', async () => {
    const { kafka } = fakeKafka({ ...fakeCluster(), addMultipleTargetTopics: undefined });
    await expect(new MemberlessOffsetCommitter(kafka, 'orders').commit([move('a', 0, 0, 1)])).rejects.toThrow(
      /a cluster lacks one of connect, disconnect, addMultipleTargetTopics, findGroupCoordinator/,
    );
  });

  it('changed: a coordinator without offsetCommit, not retried', async () => {
    const cluster = fakeCluster();
    cluster.findGroupCoordinator.mockResolvedValue({});
    const { kafka } = fakeKafka(cluster);
    await expect(new MemberlessOffsetCommitter(kafka, 'orders', quick).commit([move('a', 0, 0, 1)])).rejects.toBeInstanceOf(
      KafkaInternalsChangedError,
    );
    expect(cluster.findGroupCoordinator).toHaveBeenCalledTimes(1);
    expect(cluster.disconnect).toHaveBeenCalled();
  });

  it.each([
    ['no responses', {}],
    ['an entry without a topic', { responses: [{ partitions: [] }] }],
    ['a partition without an error code', { responses: [{ topic: 'a', partitions: [{ partition: 0 }] }] }],
  ])('changed: an OffsetCommit response with %s', (_, response) => {
    expect(() => parseOffsetCommitResponse(response)).toThrow(KafkaInternalsChangedError);
  });
});

describe('MemberlessOffsetCommitter', () => {
  it('sends one request for every topic to the coordinator, on a cluster of its own it then closes', async () => {
    // Prepare
    const cluster = fakeCluster();
    const { kafka, createCluster } = fakeKafka(cluster);
    const committer = new MemberlessOffsetCommitter(kafka, 'orders');

    // Act
    await committer.commit([move('a', 0, undefined, 7), move('b', 2, 1, 3)]);

    // Assess
    expect(committer.groupId).toBe('orders.lanes');
    expect(createCluster).toHaveBeenCalledWith({ allowAutoTopicCreation: false });
    expect(cluster.steps).toEqual(['connect', 'metadata a,b', 'findGroupCoordinator', 'offsetCommit', 'disconnect']);
    expect(cluster.findGroupCoordinator).toHaveBeenCalledWith({ groupId: 'orders.lanes' });
    expect(cluster.coordinator.offsetCommit.mock.calls).toEqual([
      [offsetCommitRequest('orders.lanes', [move('a', 0, undefined, 7), move('b', 2, 1, 3)])],
    ]);
  });

  it('opens nothing when there is nothing to commit', async () => {
    const { kafka, createCluster } = fakeKafka();
    await new MemberlessOffsetCommitter(kafka, 'orders').commit([]);
    expect(createCluster).not.toHaveBeenCalled();
  });

  it.each([
    ['NOT_COORDINATOR_FOR_GROUP', 16],
    ['GROUP_LOAD_IN_PROGRESS', 14],
    ['GROUP_COORDINATOR_NOT_AVAILABLE', 15],
  ])('looks the coordinator up again and resends on %s', async (type, code) => {
    // Prepare
    const cluster = fakeCluster();
    cluster.coordinator.offsetCommit.mockRejectedValueOnce(kafkaError(type, code, true));
    const { kafka } = fakeKafka(cluster);

    // Act
    await new MemberlessOffsetCommitter(kafka, 'orders', quick).commit([move('a', 0, undefined, 7)]);

    // Assess: the refused first send records no step of its own
    expect(cluster.steps).toEqual(['connect', 'metadata a', 'findGroupCoordinator', 'findGroupCoordinator', 'offsetCommit', 'disconnect']);
    expect(cluster.coordinator.offsetCommit).toHaveBeenCalledTimes(2);
  });

  it('gives up after `retries` retries with an OffsetCommitError', async () => {
    const cluster = fakeCluster();
    cluster.coordinator.offsetCommit.mockRejectedValue(kafkaError('NOT_COORDINATOR_FOR_GROUP', 16, true));
    const { kafka } = fakeKafka(cluster);
    const committing = new MemberlessOffsetCommitter(kafka, 'orders', quick).commit([move('a', 0, undefined, 7)]);
    await expect(committing).rejects.toBeInstanceOf(OffsetCommitError);
    await expect(committing).rejects.toMatchObject({ kafkaError: 'NOT_COORDINATOR_FOR_GROUP', retriable: true });
    expect(cluster.coordinator.offsetCommit).toHaveBeenCalledTimes(3);
    expect(cluster.disconnect).toHaveBeenCalledTimes(1);
  });

  it('throws GroupHasMembersError at once when the group has live members, and still closes its cluster', async () => {
    const cluster = fakeCluster();
    cluster.coordinator.offsetCommit.mockRejectedValue(kafkaError('UNKNOWN_MEMBER_ID', 25));
    const { kafka } = fakeKafka(cluster);
    const committing = new MemberlessOffsetCommitter(kafka, 'orders', quick).commit([move('a', 0, undefined, 7)]);
    await expect(committing).rejects.toBeInstanceOf(GroupHasMembersError);
    await expect(committing).rejects.toMatchObject({ groupId: 'orders.lanes', kafkaError: 'UNKNOWN_MEMBER_ID' });
    expect(cluster.coordinator.offsetCommit).toHaveBeenCalledTimes(1);
    expect(cluster.steps.at(-1)).toBe('disconnect');
  });

  it('commits nothing when a topic no longer exists: the metadata load fails first', async () => {
    const cluster = fakeCluster();
    cluster.addMultipleTargetTopics.mockRejectedValue(kafkaError('UNKNOWN_TOPIC_OR_PARTITION', 3, true));
    const { kafka } = fakeKafka(cluster);
    const committing = new MemberlessOffsetCommitter(kafka, 'orders').commit([move('gone', 0, undefined, 7)]);
    await expect(committing).rejects.toMatchObject({ name: 'OffsetCommitError', kafkaError: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(cluster.coordinator.offsetCommit).not.toHaveBeenCalled();
  });

  it('keeps the commit\'s error when closing its cluster fails too, and reports a failed close otherwise', async () => {
    const failing = fakeCluster();
    failing.coordinator.offsetCommit.mockRejectedValue(kafkaError('UNKNOWN_MEMBER_ID', 25));
    failing.disconnect.mockRejectedValue(new Error('close failed'));
    await expect(new MemberlessOffsetCommitter(fakeKafka(failing).kafka, 'o').commit([move('a', 0, 0, 1)])).rejects.toBeInstanceOf(
      GroupHasMembersError,
    );
    const closing = fakeCluster();
    closing.disconnect.mockRejectedValue(new Error('close failed'));
    await expect(new MemberlessOffsetCommitter(fakeKafka(closing).kafka, 'o').commit([move('a', 0, 0, 1)])).rejects.toThrow(
      'close failed',
    );
  });

  it('reads committed offsets through a new admin, and names topics that no longer exist', async () => {
    // Prepare
    const admin = fakeAdmin(['a', 'c']);
    const { kafka } = fakeKafka(fakeCluster(), admin);
    const committer = new MemberlessOffsetCommitter(kafka, 'orders');

    // Act / Assess
    expect(await committer.fetchCommitted(['a'])).toEqual([{ topic: 'a', partition: 0, offset: 5 }]);
    expect(admin.fetchOffsets).toHaveBeenCalledWith({ groupId: 'orders.lanes', topics: ['a'] });
    const missing = committer.fetchCommitted(['a', 'b', 'c', 'd']);
    await expect(missing).rejects.toBeInstanceOf(TopicMissingError);
    await expect(missing).rejects.toMatchObject({ topics: ['b', 'd'] });
    expect(admin.fetchOffsets).toHaveBeenCalledTimes(1);
    // One admin per read, and one per absent topic asked for by name.
    expect(admin.connect).toHaveBeenCalledTimes(4);
    expect(admin.disconnect).toHaveBeenCalledTimes(4);
    expect(await committer.fetchCommitted([])).toEqual([]);
    expect(admin.connect).toHaveBeenCalledTimes(4);
  });

  it('fails naming the topics and the group when Kafka refuses to describe a topic, instead of skipping it as deleted', async () => {
    // Prepare: `b` is refused (absent from the listing), `d` deleted.
    const admin = fakeAdmin(['a'], ['b']);
    const committer = new MemberlessOffsetCommitter(fakeKafka(fakeCluster(), admin).kafka, 'orders');

    // Act
    const read = committer.fetchCommitted(['a', 'b', 'd']);

    // Assess
    await expect(read).rejects.toBeInstanceOf(OffsetFetchRefusedError);
    await expect(read).rejects.toMatchObject({ groupId: 'orders.lanes', topics: ['b'], kafkaError: 'TOPIC_AUTHORIZATION_FAILED', retriable: false });
    await expect(read).rejects.toThrow(/group orders\.lanes has committed on b \(TOPIC_AUTHORIZATION_FAILED\).*DescribeTopic/);
    expect(admin.fetchOffsets).not.toHaveBeenCalled();
  });

  it('names the group and what to grant when kafkajs finds no coordinator (how it reports a refused group)', async () => {
    // Prepare
    const admin = fakeAdmin(['a']);
    admin.fetchOffsets.mockRejectedValueOnce(Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound' }));
    const committer = new MemberlessOffsetCommitter(fakeKafka(fakeCluster(), admin).kafka, 'orders');

    // Act / Assess
    await expect(committer.fetchCommitted(['a'])).rejects.toThrow(/no coordinator of group orders\.lanes .*DescribeGroup on group orders\.lanes/);
  });

  it('names the group when kafkajs finds no coordinator while reading everything the group committed', async () => {
    // Prepare
    const admin = fakeAdmin(['a']);
    admin.fetchOffsets.mockRejectedValueOnce(Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound' }));
    const committer = new MemberlessOffsetCommitter(fakeKafka(fakeCluster(), admin).kafka, 'orders');

    // Act / Assess
    await expect(committer.fetchAllCommitted()).rejects.toThrow(/no coordinator of group orders\.lanes .*DescribeGroup/);
  });

  it('names the group when Kafka refuses to describe it', async () => {
    // Prepare
    const admin = fakeAdmin(['a']);
    admin.fetchOffsets.mockRejectedValueOnce(Object.assign(new Error('Not authorized to access group'), { type: 'GROUP_AUTHORIZATION_FAILED', code: 30 }));
    const committer = new MemberlessOffsetCommitter(fakeKafka(fakeCluster(), admin).kafka, 'orders');

    // Act / Assess
    await expect(committer.fetchCommitted(['a'])).rejects.toThrow(/orders\.lanes .*GROUP_AUTHORIZATION_FAILED.*DescribeGroup on group orders\.lanes/);
  });

  it.each([
    ['an empty group', '', {}, 'Expected `group` to be a non-empty string, got `` (string)'],
    ['negative retries', 'g', { retries: -1 }, 'Expected `retries` to be a non-negative integer, got `-1` (number)'],
    ['a zero first wait', 'g', { initialRetryMs: 0 }, 'Expected `initialRetryMs` to be a positive integer, got `0` (number)'],
    ['a fractional longest wait', 'g', { maxRetryMs: 1.5 }, 'Expected `maxRetryMs` to be a positive integer'],
  ])('rejects %s', (_, group, options, message) => {
    expect(() => new MemberlessOffsetCommitter(fakeKafka().kafka, group, options)).toThrow(ConfigError);
    expect(() => new MemberlessOffsetCommitter(fakeKafka().kafka, group, options)).toThrow(message);
  });
});
