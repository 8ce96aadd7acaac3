import { runCommitter, type RunCommitterOptions } from '../../../src/committer/committer';
import { LeaseLostError, TopicMissingError } from '../../../src/committer/errors';
import { CommitterState } from '../../../src/completion/committer-state';
import { committerLeaseKey } from '../../../src/completion/keys';
import type { RedisClient } from '../../../src/completion/scripts';
import type { OffsetCommitter } from '../../../src/committer/offset-committer';
import { PlanReasonCode, type CommitMove, type CommittedOffset } from '../../../src/committer/types';
import type { FrontierReading } from '../../../src/completion';
import type { PartitionRef } from '../../../src/ports/partition';

type Store = RunCommitterOptions['store'];
type ScriptCommand = (numKeys: number, ...args: string[]) => Promise<number>;

/**
 * Just enough of Redis for the lease and the readings: `SET NX`, `DEL`, the lease scripts by their meaning
 * (extend or release when the token matches), `HGETALL` and `HSET`.
 */
function fakeRedis(): RedisClient {
  const strings = new Map<string, string>();
  const hashes = new Map<string, Record<string, string>>();
  const redis: Record<string, unknown> = {
    set: async (key: string, value: string) => {
      if (strings.has(key)) return null;
      strings.set(key, value);
      return 'OK';
    },
    del: async (key: string) => Number(strings.delete(key)),
    hgetall: async (key: string) => ({ ...hashes.get(key) }),
    hset: async (key: string, fields: Record<string, string>) => {
      hashes.set(key, { ...hashes.get(key), ...fields });
      return Object.keys(fields).length;
    },
    defineCommand: (name: string) => {
      const command: ScriptCommand = async (_, key = '', token = '') => {
        if (strings.get(key) !== token) return 0;
        if (name.includes('release')) strings.delete(key);
        return 1;
      };
      redis[name] = command;
    },
  };
  return redis as unknown as RedisClient;
}

/** A completion store whose partitions have these frontiers (highest = frontier + 5). */
function fakeStore(group: string, frontiers: ReadonlyArray<[topic: string, partition: number, frontier: number]>): Store & { redis: RedisClient } {
  const refs: PartitionRef[] = frontiers.map(([topic, partition]) => ({ group, topic, partition }));
  const byId = new Map(frontiers.map(([topic, partition, frontier]) => [`${topic}-${partition}`, frontier]));
  const redis = fakeRedis();
  return {
    redis,
    // The lease and the readings on the fake Redis; the tracked set, the stamp and the mark as a fresh state has them.
    committerState: (name: string) => {
      const real = new CommitterState(redis, name);
      return {
        group: name, leaseKey: real.leaseKey, readingsKey: real.readingsKey,
        takeLease: (token: string, ttlMs: number) => real.takeLease(token, ttlMs),
        extendLease: (token: string, ttlMs: number) => real.extendLease(token, ttlMs),
        releaseLease: (token: string) => real.releaseLease(token),
        readings: () => real.readings(),
        writeReadings: (fields: Record<string, string>) => real.writeReadings(fields),
        tracked: async () => refs,
        track: async () => undefined,
        stamp: async (_ref: PartitionRef, generation: string) => generation,
        mark: async () => true,
      };
    },
    // Redis as a fresh state shows it to the durability checks: nothing to compare, no generation to stamp.
    audit: async () => ({
      present: false, base: undefined, highest: undefined, generation: undefined, parked: 0, parkedInLists: 0, lanes: 0, openLanes: 0,
      lowestHead: undefined, recoveringUntil: undefined, recoveries: 0,
    }),
    frontier: async (ref: PartitionRef): Promise<FrontierReading | undefined> => {
      const frontier = byId.get(`${ref.topic}-${ref.partition}`);
      return frontier === undefined ? undefined : { base: 0, frontier, highest: frontier + 5, trimmedBytes: 0 };
    },
  };
}

/** An in-memory group: commits land, reads give them back; topics in `missing` do not exist. */
function memoryCommitter(options: { missing?: string[] } = {}) {
  const committed = new Map<string, CommittedOffset>();
  const missing = new Set(options.missing);
  const committer = {
    groupId: 'orders.lanes',
    fetchCommitted: jest.fn(async (topics: readonly string[]) => {
      const gone = topics.filter((topic) => missing.has(topic));
      if (gone.length > 0) throw new TopicMissingError(`missing ${gone.join(', ')}`, { topics: gone });
      return [...committed.values()].filter((c) => topics.includes(c.topic));
    }),
    commit: jest.fn(async (moves: readonly CommitMove[]) => {
      for (const m of moves) committed.set(`${m.topic}-${m.partition}`, { topic: m.topic, partition: m.partition, offset: m.to });
    }),
  } satisfies OffsetCommitter;
  return committer;
}

describe('runCommitter with an OffsetCommitter', () => {
  it('commits every move of every topic in one call', async () => {
    // Prepare
    const store = fakeStore('orders', [
      ['a', 0, 4],
      ['a', 1, 2],
      ['b', 0, 9],
    ]);
    const committer = memoryCommitter();

    // Act
    const result = await runCommitter({ store, committer, group: 'orders' });

    // Assess
    expect(committer.commit.mock.calls).toEqual([
      [
        [
          { topic: 'a', partition: 0, from: undefined, to: 4 },
          { topic: 'a', partition: 1, from: undefined, to: 2 },
          { topic: 'b', partition: 0, from: undefined, to: 9 },
        ],
        expect.objectContaining({ renew: expect.any(Function) }),
      ],
    ]);
    expect(result.partitions.map((p) => p.committed)).toEqual([4, 2, 9]);
  });

  it('hands the committer its lease: a commit of one request per topic stops once the lease is lost', async () => {
    // Prepare: a committer that sends one request per topic, renewing the lease before each; while the
    // first request is on its way, the lease expires and another run takes it
    const store = fakeStore('orders', [
      ['a', 0, 4],
      ['b', 0, 9],
    ]);
    const sent: string[] = [];
    const committer: OffsetCommitter = {
      groupId: 'orders.lanes',
      fetchCommitted: async () => [],
      async commit(moves, lease) {
        for (const topic of new Set(moves.map((m) => m.topic))) {
          await lease?.renew();
          sent.push(topic);
          await store.redis.del(committerLeaseKey('orders'));
          await store.redis.set(committerLeaseKey('orders'), 'another run', 'PX', 60_000, 'NX');
        }
      },
    };

    // Act / Assess
    await expect(runCommitter({ store, committer, group: 'orders' })).rejects.toBeInstanceOf(LeaseLostError);
    expect(sent).toEqual(['a']);
  });

  it('skips the partitions of a topic that no longer exists, reports them, and commits the rest', async () => {
    // Prepare
    const store = fakeStore('orders', [
      ['a', 0, 4],
      ['gone', 0, 7],
      ['gone', 1, 3],
    ]);
    const committer = memoryCommitter({ missing: ['gone'] });

    // Act
    const result = await runCommitter({ store, committer, group: 'orders' });

    // Assess
    expect(committer.fetchCommitted.mock.calls).toEqual([[['a', 'gone']], [['a']], [['a']]]);
    expect(result.moves).toEqual([{ topic: 'a', partition: 0, from: undefined, to: 4 }]);
    expect(result.partitions.map((p) => `${p.topic}-${p.partition}`)).toEqual(['a-0']);
    expect(result.reasons).toEqual([
      { topic: 'gone', partition: 0, code: PlanReasonCode.TopicMissing, detail: 'topic gone no longer exists in Kafka: skipped' },
      { topic: 'gone', partition: 1, code: PlanReasonCode.TopicMissing, detail: 'topic gone no longer exists in Kafka: skipped' },
    ]);
  });

  it('commits nothing, and fails nothing, when every tracked topic is gone', async () => {
    const store = fakeStore('orders', [['gone', 0, 7]]);
    const committer = memoryCommitter({ missing: ['gone'] });
    const result = await runCommitter({ store, committer, group: 'orders' });
    expect(committer.commit).not.toHaveBeenCalled();
    expect(result).toMatchObject({ moves: [], partitions: [], reasons: [expect.objectContaining({ code: 'topic-missing' })] });
  });
});
