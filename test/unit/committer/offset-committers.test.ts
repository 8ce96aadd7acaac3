import type { Admin, Consumer } from 'kafkajs';
import { AdminOffsetCommitter } from '../../../src/committer/admin-committer';
import { ConsumerOffsetCommitter } from '../../../src/committer/consumer-committer';
import { OffsetFetchRefusedError, TopicMissingError } from '../../../src/committer/errors';
import { fetchCommittedOffsets, movesByTopic, parseFetchedOffsets } from '../../../src/committer/offset-committer';
import type { CommitMove } from '../../../src/committer/types';
import { LanesError } from '../../../src/errors';

const move = (topic: string, partition: number, from: number | undefined, to: number): CommitMove => ({
  topic,
  partition,
  from,
  to,
});

/** A kafkajs admin double that records what it was asked. */
function fakeAdmin(fetched: Awaited<ReturnType<Admin['fetchOffsets']>> = [], topics: string[] = []) {
  return {
    fetchOffsets: jest.fn<ReturnType<Admin['fetchOffsets']>, Parameters<Admin['fetchOffsets']>>(async () => fetched),
    setOffsets: jest.fn<ReturnType<Admin['setOffsets']>, Parameters<Admin['setOffsets']>>(async () => undefined),
    listTopics: jest.fn<ReturnType<Admin['listTopics']>, Parameters<Admin['listTopics']>>(async () => topics),
  };
}

/** What kafkajs throws when a topic's metadata cannot be loaded (a `KafkaJSProtocolError`). */
const unknownTopic = () =>
  Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION', code: 3 });

describe('parseFetchedOffsets', () => {
  it('flattens a kafkajs fetchOffsets reply, -1 becoming undefined, and keeps the metadata of a commit that has one', () => {
    const reply = [
      {
        topic: 'a',
        partitions: [
          { partition: 0, offset: '17', metadata: null },
          { partition: 1, offset: '-1', metadata: null },
        ],
      },
      { topic: 'b', partitions: [{ partition: 0, offset: '0', metadata: 'x' }] },
    ];
    expect(parseFetchedOffsets(reply)).toEqual([
      { topic: 'a', partition: 0, offset: 17 },
      { topic: 'a', partition: 1, offset: undefined },
      { topic: 'b', partition: 0, offset: 0, metadata: 'x' },
    ]);
  });
});

describe('movesByTopic', () => {
  it('groups forward moves by topic, keeping their order', () => {
    const grouped = movesByTopic([move('a', 1, 0, 5), move('b', 0, undefined, 0), move('a', 0, 3, 4)]);
    expect([...grouped.entries()]).toEqual([
      ['a', [move('a', 1, 0, 5), move('a', 0, 3, 4)]],
      ['b', [move('b', 0, undefined, 0)]],
    ]);
  });

  it.each([
    ['backwards', move('a', 0, 5, 4)],
    ['in place', move('a', 0, 5, 5)],
    ['to a negative offset', move('a', 0, undefined, -1)],
    ['to a fraction', move('a', 0, undefined, 1.5)],
  ])('refuses a move %s', (_, bad) => {
    expect(() => movesByTopic([bad])).toThrow(RangeError);
  });

  it('refuses two moves of one partition', () => {
    expect(() => movesByTopic([move('a', 0, 1, 2), move('a', 0, 2, 3)])).toThrow(/one move per partition/);
  });
});

describe('fetchCommittedOffsets', () => {
  it('names the topics that no longer exist when kafkajs fails on one', async () => {
    // Prepare
    const admin = fakeAdmin([], ['a', 'c']);
    admin.fetchOffsets.mockRejectedValue(unknownTopic());
    // Act
    const fetching = fetchCommittedOffsets(admin, 'orders.lanes', ['a', 'b', 'c', 'd']);
    // Assess
    await expect(fetching).rejects.toBeInstanceOf(TopicMissingError);
    await expect(fetching).rejects.toMatchObject({ topics: ['b', 'd'], message: 'topics no longer exist in Kafka: b, d' });
  });

  it('says the admin is stale when every topic exists but kafkajs still fails on an unknown topic', async () => {
    const admin = fakeAdmin([], ['a']);
    admin.fetchOffsets.mockRejectedValue(unknownTopic());
    const fetching = fetchCommittedOffsets(admin, 'orders.lanes', ['a']);
    await expect(fetching).rejects.toBeInstanceOf(LanesError);
    await expect(fetching).rejects.toThrow(/once read a topic since deleted .* connect a new admin/);
  });

  it('passes any other error on as it is, without listing topics', async () => {
    const admin = fakeAdmin();
    const failure = new Error('Connection timeout');
    admin.fetchOffsets.mockRejectedValue(failure);
    await expect(fetchCommittedOffsets(admin, 'orders.lanes', ['a'])).rejects.toBe(failure);
    expect(admin.listTopics).not.toHaveBeenCalled();
  });

  it.each([
    ['TOPIC_AUTHORIZATION_FAILED', 29, /committed on a, b \(TOPIC_AUTHORIZATION_FAILED\).*DescribeTopic and ReadData/],
    ['GROUP_AUTHORIZATION_FAILED', 30, /group orders\.lanes .*DescribeGroup on group orders\.lanes/],
  ])('fails naming the group and the topics when Kafka refuses the read (%s)', async (type, code, message) => {
    // Prepare
    const admin = fakeAdmin();
    admin.fetchOffsets.mockRejectedValue(Object.assign(new Error('Not authorized'), { type, code }));

    // Act
    const fetching = fetchCommittedOffsets(admin, 'orders.lanes', ['a', 'b']);

    // Assess
    await expect(fetching).rejects.toBeInstanceOf(OffsetFetchRefusedError);
    await expect(fetching).rejects.toMatchObject({ groupId: 'orders.lanes', topics: ['a', 'b'], kafkaError: type });
    await expect(fetching).rejects.toThrow(message);
  });

  it('asks nothing for no topics', async () => {
    const admin = fakeAdmin();
    expect(await fetchCommittedOffsets(admin, 'orders.lanes', [])).toEqual([]);
    expect(admin.fetchOffsets).not.toHaveBeenCalled();
  });
});

describe('AdminOffsetCommitter', () => {
  it('commits the completion group, one setOffsets per topic, offsets as strings, renewing the lease before each', async () => {
    // Prepare
    const admin = fakeAdmin();
    const committer = new AdminOffsetCommitter(admin, 'orders');
    const steps: string[] = [];
    admin.setOffsets.mockImplementation(async ({ topic }: { topic: string }) => {
      steps.push(`setOffsets ${topic}`);
    });
    const lease = { renew: async () => void steps.push('renew') };
    // Act
    await committer.commit([move('a', 0, undefined, 7), move('b', 2, 1, 3), move('a', 1, 4, 9)], lease);
    // Assess: each topic costs seconds, so the run's lease is renewed before each
    expect(committer.groupId).toBe('orders.lanes');
    expect(steps).toEqual(['renew', 'setOffsets a', 'renew', 'setOffsets b']);
    expect(admin.setOffsets.mock.calls).toEqual([
      [{ groupId: 'orders.lanes', topic: 'a', partitions: [{ partition: 0, offset: '7' }, { partition: 1, offset: '9' }] }],
      [{ groupId: 'orders.lanes', topic: 'b', partitions: [{ partition: 2, offset: '3' }] }],
    ]);
  });

  it('never sends a backward move', async () => {
    const admin = fakeAdmin();
    await expect(new AdminOffsetCommitter(admin, 'orders').commit([move('a', 0, 9, 3)])).rejects.toThrow(RangeError);
    expect(admin.setOffsets).not.toHaveBeenCalled();
  });

  it('fetches what the completion group has committed, and nothing for no topics', async () => {
    const admin = fakeAdmin([{ topic: 'a', partitions: [{ partition: 0, offset: '3', metadata: null }] }]);
    const committer = new AdminOffsetCommitter(admin, 'orders');
    expect(await committer.fetchCommitted([])).toEqual([]);
    expect(admin.fetchOffsets).not.toHaveBeenCalled();
    expect(await committer.fetchCommitted(['a'])).toEqual([{ topic: 'a', partition: 0, offset: 3 }]);
    expect(admin.fetchOffsets).toHaveBeenCalledWith({ groupId: 'orders.lanes', topics: ['a'] });
  });
});

describe('ConsumerOffsetCommitter', () => {
  it('commits every move in one commitOffsets call of the member', async () => {
    const consumer = { commitOffsets: jest.fn<ReturnType<Consumer['commitOffsets']>, Parameters<Consumer['commitOffsets']>>() };
    const admin = fakeAdmin();
    const committer = new ConsumerOffsetCommitter({ consumer, admin, groupId: 'orders' });
    await committer.commit([move('a', 0, undefined, 7), move('b', 2, 1, 3)]);
    await committer.commit([]);
    expect(committer.groupId).toBe('orders');
    expect(consumer.commitOffsets.mock.calls).toEqual([
      [
        [
          { topic: 'a', partition: 0, offset: '7' },
          { topic: 'b', partition: 2, offset: '3' },
        ],
      ],
    ]);
    await committer.fetchCommitted(['a']);
    expect(admin.fetchOffsets).toHaveBeenCalledWith({ groupId: 'orders', topics: ['a'] });
  });

  it('never sends a backward move', async () => {
    const consumer = { commitOffsets: jest.fn<ReturnType<Consumer['commitOffsets']>, Parameters<Consumer['commitOffsets']>>() };
    const committer = new ConsumerOffsetCommitter({ consumer, admin: fakeAdmin(), groupId: 'orders' });
    await expect(committer.commit([move('a', 0, 3, 3)])).rejects.toThrow(RangeError);
    expect(consumer.commitOffsets).not.toHaveBeenCalled();
  });
});
