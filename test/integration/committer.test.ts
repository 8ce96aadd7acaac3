/**
 * The committer against a real Kafka broker and real Redis (standalone and cluster): what it commits is
 * read back from Kafka with `admin.fetchOffsets`, never taken from the committer's own report.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import {
  AdminOffsetCommitter,
  CommitNotAppliedError,
  CommitterLease,
  LeaseLostError,
  PlanReasonCode,
  completionGroupId,
  runCommitter,
  type CommitterResult,
  type OffsetCommitter,
} from '../../src/committer';
import { CompletionStore, type PartitionRef } from '../../src/completion';
import { createKafka, createTopic, deleteTopics, redisSetups, uniqueName } from './support/stack';

// Runs commit through real group joins; jest's `testTimeout` is a global option, so the
// integration project's value does not reach this file's hooks and tests.
jest.setTimeout(120_000);

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const records = (offsets: number[]) => offsets.map((offset) => ({ offset }));

/** A deterministic shuffle (a small LCG), so a failing round can be replayed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

describe.each(redisSetups())('committer on Redis $name', ({ connect }) => {
  let redis: Redis | Cluster;
  let store: CompletionStore;
  let kafka: Kafka;
  let admin: Admin;
  const topics: string[] = [];

  beforeAll(async () => {
    redis = connect();
    kafka = createKafka();
    admin = kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin.disconnect();
    await redis.quit();
    await deleteTopics(topics);
  });
  beforeEach(() => {
    store = new CompletionStore(redis, { maxWindow: 100_000, maxParked: 100 });
  });

  /** A fresh topic with `partitions` partitions and `perPartition` real records in each. */
  async function topicWithRecords(partitions: number, perPartition: number): Promise<string> {
    const topic = uniqueName('committer');
    topics.push(topic);
    await createTopic(topic, partitions);
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic,
        acks: -1,
        messages: range(0, partitions - 1).flatMap((partition) =>
          range(0, perPartition - 1).map((i) => ({ partition, value: `r${i}` })),
        ),
      });
    } finally {
      await producer.disconnect();
    }
    return topic;
  }

  /** What `groupId` has committed on each partition of `topic`, read from Kafka (`-1`: nothing). */
  async function committedOf(groupId: string, topic: string): Promise<number[]> {
    const [fetched] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return (fetched?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
  }

  const partitionOf = (result: CommitterResult, partition: number) => result.partitions.find((p) => p.partition === partition);

  describe('the lease', () => {
    it('is held by one run at a time and extended or released only by its holder', async () => {
      // Prepare
      const group = uniqueName('grp{:}');
      const first = await CommitterLease.acquire(redis, group, 5_000);

      // Act / Assess
      expect(first).toBeDefined();
      expect(await CommitterLease.acquire(redis, group, 5_000)).toBeUndefined();
      await first?.renew();
      expect(first?.remainingMs()).toBeGreaterThan(4_000);
      expect(await first?.release()).toBe(true);
      expect(await first?.release()).toBe(false);
      await expect(first?.renew()).rejects.toBeInstanceOf(LeaseLostError);
    });

    it('lets a run whose lease expired neither extend nor release the next holder\'s lease', async () => {
      // Prepare
      const group = uniqueName('grp');
      const stale = await CommitterLease.acquire(redis, group, 50);
      await new Promise((resolve) => setTimeout(resolve, 120));
      const current = await CommitterLease.acquire(redis, group, 5_000);
      expect(current).toBeDefined();

      // Act / Assess
      expect(() => stale?.assertStillHeld('a commit')).toThrow(LeaseLostError);
      await expect(stale?.renew()).rejects.toBeInstanceOf(LeaseLostError);
      expect(await stale?.release()).toBe(false);
      expect(await redis.get(current?.key ?? '')).toBe(current?.token);
      expect(await current?.release()).toBe(true);
    });
  });

  describe('the admin way (completion group <group>.lanes)', () => {
    it('commits each partition its frontier, and nothing where nothing was admitted', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(3, 12);
      const p = (partition: number): PartitionRef => ({ group, topic, partition });
      await store.admit(p(0), records(range(0, 11)));
      await store.markDone(p(0), range(0, 9));
      await store.admit(p(1), records(range(0, 4)));
      await store.markDone(p(1), [0, 1, 3, 4]);

      // Act
      const result = await runCommitter({ store, admin, group });

      // Assess
      expect(result.skipped).toBeUndefined();
      expect(result.groupId).toBe(`${group}.lanes`);
      expect(await committedOf(completionGroupId(group), topic)).toEqual([10, 2, -1]);
      expect(result.partitions).toEqual([
        expect.objectContaining({ partition: 0, committedBefore: undefined, frontier: 10, highest: 11, committed: 10 }),
        expect.objectContaining({ partition: 1, committedBefore: undefined, frontier: 2, highest: 4, committed: 2 }),
      ]);
      expect(result.moves).toHaveLength(2);
      expect(result.trimmedBytes).toBe(1); // partition 0: bits 0-7 are below frontier 10
      expect(await store.frontier(p(0))).toMatchObject({ base: 8, frontier: 10 });
      // The framework's own group was not touched.
      expect(await committedOf(group, topic)).toEqual([-1, -1, -1]);
    });

    it('stops at the first unfinished offset, across bridged gaps, and moves on when it finishes', async () => {
      // Prepare: offsets 101-104 and 107-109 were never delivered (compaction, transaction markers)
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 120);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await store.admit(ref, records([100, 105, 106, 110]));
      await store.markDone(ref, [100, 105, 110]);

      // Act / Assess: 106 is unfinished
      await runCommitter({ store, admin, group });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([106]);

      await store.markDone(ref, [106]);
      const second = await runCommitter({ store, admin, group });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([111]);
      expect(second.moves).toEqual([{ topic, partition: 0, from: 106, to: 111 }]);

      const third = await runCommitter({ store, admin, group });
      expect(third.moves).toEqual([]);
      expect(third.reasons).toEqual([expect.objectContaining({ code: PlanReasonCode.UpToDate })]);
      expect(partitionOf(third, 0)).toMatchObject({ committedBefore: 111, committed: 111, stalled: false });
    });

    it('never moves a committed offset back when the frontier is below it', async () => {
      // Prepare: the completion group is already ahead (moved by hand, or Redis lost the partition)
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 60);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await admin.setOffsets({ groupId: completionGroupId(group), topic, partitions: [{ partition: 0, offset: '50' }] });
      await store.admit(ref, records(range(0, 20)));
      await store.markDone(ref, range(0, 9));

      // Act
      const result = await runCommitter({ store, admin, group });

      // Assess
      expect(await committedOf(completionGroupId(group), topic)).toEqual([50]);
      expect(result.moves).toEqual([]);
      expect(result.reasons).toEqual([expect.objectContaining({ code: PlanReasonCode.BehindCommitted })]);
      expect(partitionOf(result, 0)).toMatchObject({ committedBefore: 50, frontier: 10, committed: 50 });
    });

    it('reports a stall: the frontier did not move between runs while later records were delivered', async () => {
      // Prepare: offset 0 hangs, 1-9 are done
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 10);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await store.admit(ref, records(range(0, 9)));
      await store.markDone(ref, range(1, 9));
      let clock = 1_000_000;
      const now = () => clock;

      // Act
      const first = await runCommitter({ store, admin, group, now });
      clock += 60_000;
      const second = await runCommitter({ store, admin, group, now });

      // Assess
      expect(partitionOf(first, 0)).toMatchObject({ committed: 0, stalled: false });
      expect(partitionOf(second, 0)).toMatchObject({ committed: 0, stalled: true, frontierAgeMs: 60_000 });
      expect(second.reasons.map((r) => r.code)).toEqual([PlanReasonCode.UpToDate, PlanReasonCode.Stalled]);

      await store.markDone(ref, [0]);
      clock += 60_000;
      const third = await runCommitter({ store, admin, group, now });
      expect(partitionOf(third, 0)).toMatchObject({ committed: 10, stalled: false, frontierAgeMs: 0 });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([10]);
    });

    it('does nothing and says so while another run holds the lease', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 5);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await store.admit(ref, records(range(0, 4)));
      await store.markDone(ref, range(0, 4));
      const other = await CommitterLease.acquire(redis, group, 30_000);
      expect(other).toBeDefined();

      // Act
      const skipped = await runCommitter({ store, admin, group });

      // Assess
      expect(skipped).toMatchObject({ skipped: 'lease-held', moves: [], partitions: [] });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([-1]);
      expect(await other?.release()).toBe(true);
      const after = await runCommitter({ store, admin, group });
      expect(after.skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([5]);
      // A run releases its lease: the next one gets it at once.
      expect((await runCommitter({ store, admin, group })).skipped).toBeUndefined();
    });

    it('never moves back while two runs race each other and offsets keep finishing (20 rounds)', async () => {
      // Prepare: 3 partitions of 200 offsets, finished chunk by chunk in a shuffled order. On even rounds
      // the lowest offset of the chunk is held back to the next round, so the frontier moves on every
      // other round and the runs meet both "nothing to move" and "commit" (a ~5 s setOffsets) states.
      const group = uniqueName('grp');
      const size = 200;
      const rounds = 20;
      const chunk = size / rounds;
      const topic = await topicWithRecords(3, size);
      const refs = range(0, 2).map((partition): PartitionRef => ({ group, topic, partition }));
      for (const ref of refs) await store.admit(ref, records(range(0, size - 1)));
      const held = new Map<number, number>();
      const marksOf = (ref: PartitionRef, round: number): number[] => {
        const offsets = shuffled(range(round * chunk, (round + 1) * chunk - 1), round * 3 + ref.partition + 1);
        const late = held.get(ref.partition);
        held.delete(ref.partition);
        if (round % 2 === 0) held.set(ref.partition, round * chunk);
        return [...offsets.filter((o) => o !== held.get(ref.partition)), ...(late === undefined ? [] : [late])];
      };
      const seen: number[][] = [];
      let skipped = 0;

      // Act: two runs start at once while other code marks more offsets
      for (let round = 0; round < rounds; round++) {
        const marks = refs.map((ref) => store.markDone(ref, marksOf(ref, round)));
        const [a, b] = await Promise.all([
          runCommitter({ store, admin, group }),
          runCommitter({ store, admin, group }),
          ...marks,
        ]);
        const results = [a, b] as CommitterResult[];
        skipped += results.filter((r) => r.skipped === 'lease-held').length;
        expect(results.some((r) => r.skipped === undefined)).toBe(true);
        seen.push(await committedOf(completionGroupId(group), topic));
      }
      await runCommitter({ store, admin, group });
      seen.push(await committedOf(completionGroupId(group), topic));

      // Assess: per partition, the committed offsets read back never decrease and end at the frontier
      for (const ref of refs) {
        const series = seen.map((offsets) => offsets[ref.partition] ?? Number.NaN);
        series.forEach((value, i) => {
          if (i > 0) expect(value).toBeGreaterThanOrEqual(series[i - 1] ?? Number.NaN);
        });
        expect(new Set(series).size).toBeGreaterThan(rounds / 4); // it did move along the way
        expect(series.at(-1)).toBe(size);
        expect((await store.frontier(ref))?.frontier).toBe(size);
      }
      expect(skipped).toBeGreaterThan(0); // the lease did turn overlapping runs away
    });

    it('refuses to go on once its lease may have expired during a commit', async () => {
      // Prepare: a lease shorter than one setOffsets (which waits out one fetch, about 5 s)
      const group = uniqueName('grp');
      const topic = await topicWithRecords(2, 5);
      for (const topicPartition of [0, 1]) {
        await store.admit({ group, topic, partition: topicPartition }, records(range(0, 4)));
        await store.markDone({ group, topic, partition: topicPartition }, range(0, 4));
      }

      // Act / Assess
      await expect(runCommitter({ store, admin, group, leaseTtlMs: 1_000 })).rejects.toBeInstanceOf(LeaseLostError);
      // The lease was not held by anyone else: the next run (with a sane lease) finishes the job.
      const next = await runCommitter({ store, admin, group });
      expect(next.skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([5, 5]);
    });

    it('throws when a commit did not land, read back from Kafka', async () => {
      // Prepare: a committer that reads the real group but drops its commits, as kafkajs can
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 5);
      await store.admit({ group, topic, partition: 0 }, records(range(0, 4)));
      await store.markDone({ group, topic, partition: 0 }, range(0, 2));
      const real = new AdminOffsetCommitter(admin, group);
      const dropping: OffsetCommitter = {
        groupId: real.groupId,
        fetchCommitted: (names) => real.fetchCommitted(names),
        commit: async () => undefined,
      };

      // Act / Assess
      await expect(runCommitter({ store, committer: dropping, group })).rejects.toThrow(
        new RegExp(`did not land on ${topic}-0 \\(wanted 3, has undefined\\)`),
      );
      await expect(runCommitter({ store, committer: dropping, group })).rejects.toBeInstanceOf(CommitNotAppliedError);
      // A failed run released its lease.
      expect((await runCommitter({ store, admin, group })).skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([3]);
    });
  });

  describe('the consumer way (a member of the live group)', () => {
    let consumer: Consumer | undefined;

    afterEach(async () => {
      await consumer?.disconnect();
      consumer = undefined;
    });

    /** A running member of `group` on `topic` that commits nothing on its own. */
    async function liveMember(group: string, topic: string): Promise<Consumer> {
      const member = kafka.consumer({ groupId: group });
      consumer = member;
      await member.connect();
      await member.subscribe({ topic, fromBeginning: true });
      const joined = new Promise<void>((resolve) => member.on(member.events.GROUP_JOIN, () => resolve()));
      await member.run({ autoCommit: false, eachMessage: async () => undefined });
      await joined;
      return member;
    }

    it('commits the frontier as a member of the group', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(2, 30);
      const member = await liveMember(group, topic);
      await store.admit({ group, topic, partition: 0 }, records(range(0, 29)));
      await store.markDone({ group, topic, partition: 0 }, [...range(0, 19), 21]);
      await store.admit({ group, topic, partition: 1 }, records(range(0, 29)));
      await store.markDone({ group, topic, partition: 1 }, range(0, 29));

      // Act
      const result = await runCommitter({ store, consumer: member, admin, group });

      // Assess
      expect(result.groupId).toBe(group);
      expect(await committedOf(group, topic)).toEqual([20, 30]);
      expect(result.partitions.map((p) => p.committed)).toEqual([20, 30]);
      // The live group cannot be written through the admin API: that is what the consumer way is for.
      await expect(
        admin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '25' }] }),
      ).rejects.toThrow(/no running instances/);

      // And it only moves forward from there.
      await store.markDone({ group, topic, partition: 0 }, [20]);
      await runCommitter({ store, consumer: member, admin, group });
      expect(await committedOf(group, topic)).toEqual([22, 30]); // 21 was done already
    });

    it('fails loudly, and releases its lease, when the consumer is not running', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 5);
      const member = await liveMember(group, topic);
      await member.stop();
      await store.admit({ group, topic, partition: 0 }, records(range(0, 4)));
      await store.markDone({ group, topic, partition: 0 }, range(0, 4));

      // Act / Assess
      await expect(runCommitter({ store, consumer: member, admin, group })).rejects.toThrow();
      expect(await committedOf(group, topic)).toEqual([-1]);
      const lease = await CommitterLease.acquire(redis, group, 1_000);
      expect(lease).toBeDefined();
      await lease?.release();
    });
  });
});
