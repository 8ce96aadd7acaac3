/**
 * The committer against a real Kafka broker and real Redis (standalone and cluster): what it commits is
 * read back from Kafka with `admin.fetchOffsets`, never taken from the committer's own report.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type Cluster } from 'ioredis';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import {
  AdminOffsetCommitter,
  CommitNotAppliedError,
  CommitterLease,
  ConsumerOffsetCommitter,
  GroupHasMembersError,
  LeaseLostError,
  MemberlessOffsetCommitter,
  OffsetCommitError,
  PlanReasonCode,
  TopicMissingError,
  completionGroupId,
  runCommitter,
  type CommitMove,
  type CommitterResult,
  type OffsetCommitter,
} from '../../src/committer';
import { CompletionStore } from '../../src/completion';
import type { PartitionRef } from '../../src/ports/partition';
import { REDIS_URL, createKafka, createTopic, deleteTopics, redisSetups, uniqueName } from './support/stack';

// jest's `testTimeout` is a global option, so the integration project's value does not reach this
// file's hooks and tests. The AdminOffsetCommitter test waits out a group join (~5 s).
jest.setTimeout(60_000);

/**
 * The durable marker every commit carries (docs/durability.md): generation, highest admitted offset, and `since`,
 * where the state was born (the first offset it admitted).
 */
const MARKER = expect.stringMatching(/^kl1:[0-9a-f]+:\d+:\d+$/) as unknown as string;

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

/** The Kafka side every block uses: one client, one admin, and the topics to delete at the end. */
function kafkaFixture() {
  const fixture = { kafka: createKafka(), admin: undefined as unknown as Admin, topics: [] as string[] };
  beforeAll(async () => {
    fixture.admin = fixture.kafka.admin();
    await fixture.admin.connect();
  });
  afterAll(async () => {
    await fixture.admin.disconnect();
    await deleteTopics(fixture.topics);
  });

  /** A fresh topic with `partitions` partitions and `perPartition` real records in each. */
  async function topicWithRecords(partitions: number, perPartition: number): Promise<string> {
    const topic = uniqueName('committer');
    fixture.topics.push(topic);
    await createTopic(topic, partitions);
    const producer = fixture.kafka.producer();
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
    const [fetched] = await fixture.admin.fetchOffsets({ groupId, topics: [topic] });
    return (fetched?.partitions ?? []).sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
  }

  /** Deletes a topic and waits until the broker no longer lists it. */
  async function deleteTopic(topic: string): Promise<void> {
    await deleteTopics([topic]);
    const admin = fixture.kafka.admin();
    await admin.connect();
    try {
      for (let i = 0; i < 100 && (await admin.listTopics()).includes(topic); i++) await sleep(50);
    } finally {
      await admin.disconnect();
    }
  }

  /** A running kafkajs consumer of `groupId` on `topic` that commits nothing on its own; stop it with `disconnect`. */
  async function liveMember(groupId: string, topic: string): Promise<Consumer> {
    // A short fetch wait: stopping a consumer waits out its fetch in flight (5 s by default).
    const member = fixture.kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await member.connect();
    await member.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => member.on(member.events.GROUP_JOIN, () => resolve()));
    await member.run({ autoCommit: false, eachMessage: async () => undefined });
    await joined;
    return member;
  }

  return { fixture, topicWithRecords, committedOf, deleteTopic, liveMember };
}

const move = (topic: string, partition: number, to: number): CommitMove => ({ topic, partition, from: undefined, to });

describe('MemberlessOffsetCommitter (one OffsetCommit by no member)', () => {
  const { fixture, topicWithRecords, committedOf, deleteTopic, liveMember } = kafkaFixture();

  it('commits, and the commit reads back through admin.fetchOffsets', async () => {
    // Prepare
    const group = uniqueName('grp');
    const topic = await topicWithRecords(3, 10);
    const committer = new MemberlessOffsetCommitter(fixture.kafka, group);

    // Act
    await committer.commit([move(topic, 0, 7), move(topic, 2, 10)]);

    // Assess
    expect(committer.groupId).toBe(`${group}.lanes`);
    expect(await committedOf(completionGroupId(group), topic)).toEqual([7, -1, 10]);
    expect(await committer.fetchCommitted([topic])).toEqual([
      { topic, partition: 0, offset: 7 },
      { topic, partition: 1, offset: undefined },
      { topic, partition: 2, offset: 10 },
    ]);
  });

  it('commits the partitions of two topics in one call', async () => {
    // Prepare
    const group = uniqueName('grp');
    const [a, b] = [await topicWithRecords(2, 10), await topicWithRecords(1, 10)];
    const committer = new MemberlessOffsetCommitter(fixture.kafka, group);

    // Act
    await committer.commit([move(a, 1, 4), move(b, 0, 9), move(a, 0, 2)]);

    // Assess
    expect(await committedOf(completionGroupId(group), a)).toEqual([2, 4]);
    expect(await committedOf(completionGroupId(group), b)).toEqual([9]);
  });

  it('is refused with GroupHasMembersError while a kafkajs consumer of the group runs, and changes nothing', async () => {
    // Prepare: the completion group has offsets within the log (a member would reset others), then a member
    const group = uniqueName('grp');
    const groupId = completionGroupId(group);
    const topic = await topicWithRecords(2, 10);
    const committer = new MemberlessOffsetCommitter(fixture.kafka, group);
    await committer.commit([move(topic, 0, 3), move(topic, 1, 5)]);
    const member = await liveMember(groupId, topic);

    try {
      // Act
      const refused = committer.commit([move(topic, 0, 8), move(topic, 1, 9)]);

      // Assess
      await expect(refused).rejects.toBeInstanceOf(GroupHasMembersError);
      await expect(committer.commit([move(topic, 0, 8)])).rejects.toMatchObject({
        groupId,
        kafkaError: 'UNKNOWN_MEMBER_ID',
        message: expect.stringContaining(`group ${groupId}`),
      });
      expect(await committedOf(groupId, topic)).toEqual([3, 5]);
    } finally {
      await member.disconnect();
    }
    // Once the member has left, the group takes member-less commits again.
    await committer.commit([move(topic, 0, 8)]);
    expect(await committedOf(groupId, topic)).toEqual([8, 5]);
  });

  it('reports a deleted topic: TopicMissingError on reading, and a commit naming it commits nothing', async () => {
    // Prepare
    const group = uniqueName('grp');
    const [kept, gone] = [await topicWithRecords(1, 10), await topicWithRecords(1, 10)];
    const committer = new MemberlessOffsetCommitter(fixture.kafka, group);
    await committer.fetchCommitted([kept, gone]);
    await deleteTopic(gone);

    // Act / Assess
    await expect(committer.fetchCommitted([kept, gone])).rejects.toBeInstanceOf(TopicMissingError);
    await expect(committer.fetchCommitted([gone, kept])).rejects.toMatchObject({ topics: [gone] });
    const naming = committer.commit([move(kept, 0, 4), move(gone, 0, 4)]);
    await expect(naming).rejects.toBeInstanceOf(OffsetCommitError);
    await expect(naming).rejects.toMatchObject({ kafkaError: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(await committedOf(completionGroupId(group), kept)).toEqual([-1]);
    // The committer is not left broken by the deleted topic.
    await committer.commit([move(kept, 0, 4)]);
    expect(await committer.fetchCommitted([kept])).toEqual([{ topic: kept, partition: 0, offset: 4 }]);
  });
});

describe('AdminOffsetCommitter (kafkajs public API only)', () => {
  const { fixture, topicWithRecords, committedOf } = kafkaFixture();
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('commits the frontiers through setOffsets', async () => {
    // Prepare
    const group = uniqueName('grp');
    const topic = await topicWithRecords(2, 10);
    const store = new CompletionStore(redis, { maxWindow: 100_000, maxParked: 100 });
    await store.admit({ group, topic, partition: 0 }, records(range(0, 9)));
    await store.markDone({ group, topic, partition: 0 }, range(0, 5));
    await store.admit({ group, topic, partition: 1 }, records(range(0, 9)));
    await store.markDone({ group, topic, partition: 1 }, range(0, 9));

    // Act
    const result = await runCommitter({ store, group, committer: new AdminOffsetCommitter(fixture.admin, group) });

    // Assess
    expect(result.groupId).toBe(completionGroupId(group));
    expect(await committedOf(completionGroupId(group), topic)).toEqual([6, 10]);
    expect(result.partitions.map((p) => p.committed)).toEqual([6, 10]);
  });
});

describe.each(redisSetups())('committer on Redis $name', ({ connect }) => {
  let redis: Redis | Cluster;
  let store: CompletionStore;
  const { fixture, topicWithRecords, committedOf, deleteTopic, liveMember } = kafkaFixture();
  let kafka: Kafka;
  let admin: Admin;

  beforeAll(() => {
    redis = connect();
    ({ kafka, admin } = fixture);
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    store = new CompletionStore(redis, { maxWindow: 100_000, maxParked: 100 });
  });

  const partitionOf = (result: CommitterResult, partition: number) => result.partitions.find((p) => p.partition === partition);

  describe('the lease', () => {
    it('is held by one run at a time and extended or released only by its holder', async () => {
      // Prepare
      const group = uniqueName('grp{:}');
      const first = await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 5_000);

      // Act / Assess
      expect(first).toBeDefined();
      expect(await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 5_000)).toBeUndefined();
      await first?.renew();
      expect(first?.remainingMs()).toBeGreaterThan(4_000);
      expect(await first?.release()).toBe(true);
      expect(await first?.release()).toBe(false);
      await expect(first?.renew()).rejects.toBeInstanceOf(LeaseLostError);
    });

    it('lets a run whose lease expired neither extend nor release the next holder\'s lease', async () => {
      // Prepare
      const group = uniqueName('grp');
      const stale = await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 50);
      await new Promise((resolve) => setTimeout(resolve, 120));
      const current = await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 5_000);
      expect(current).toBeDefined();

      // Act / Assess
      expect(() => stale?.assertStillHeld('a commit')).toThrow(LeaseLostError);
      await expect(stale?.renew()).rejects.toBeInstanceOf(LeaseLostError);
      expect(await stale?.release()).toBe(false);
      expect(await redis.get(current?.key ?? '')).toBe(current?.token);
      expect(await current?.release()).toBe(true);
    });
  });

  describe('with MemberlessOffsetCommitter (completion group <group>.lanes)', () => {
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
      const result = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });

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

    it("takes an invocation that returns while the run reads for no loss: the trigger's position is read before the frontiers", async () => {
      // Prepare: 0-4 done; an invocation is running 5-9.
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 12);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await store.admit(ref, records(range(0, 9)));
      await store.markDone(ref, range(0, 4));
      await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });

      // Act: the invocation returns while the run reads what the trigger committed: its bits are stored, then the
      // trigger commits 10. A frontier read after that position would be older than it (a false loss).
      const eventSource = async (): Promise<Array<{ topic: string; partition: number; offset: number }>> => {
        await store.markDone(ref, range(5, 9));
        return [{ topic, partition: 0, offset: 10 }];
      };
      const result = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group), eventSource });

      // Assess
      expect(result.losses).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([10]);
    });

    it('stops at the first unfinished offset, across bridged gaps, and moves on when it finishes', async () => {
      // Prepare: offsets 101-104 and 107-109 were never delivered (compaction, transaction markers)
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 120);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await store.admit(ref, records([100, 105, 106, 110]));
      await store.markDone(ref, [100, 105, 110]);

      // Act / Assess: 106 is unfinished
      await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([106]);

      await store.markDone(ref, [106]);
      const second = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([111]);
      expect(second.moves).toEqual([{ topic, partition: 0, from: 106, to: 111, metadata: MARKER }]);

      const third = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      expect(third.moves).toEqual([]);
      expect(third.reasons).toEqual([expect.objectContaining({ code: PlanReasonCode.UpToDate })]);
      expect(partitionOf(third, 0)).toMatchObject({ committedBefore: 111, committed: 111, stalled: false });
    });

    it('never moves a committed offset back when the frontier is below it', async () => {
      // Prepare: the completion group is already ahead (moved by hand, or Redis lost the partition)
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 60);
      const ref: PartitionRef = { group, topic, partition: 0 };
      await new MemberlessOffsetCommitter(kafka, group).commit([move(topic, 0, 50)]);
      await store.admit(ref, records(range(0, 20)));
      await store.markDone(ref, range(0, 9));

      // Act
      const result = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });

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
      const first = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group), now });
      clock += 60_000;
      const second = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group), now });

      // Assess
      expect(partitionOf(first, 0)).toMatchObject({ committed: 0, stalled: false });
      expect(partitionOf(second, 0)).toMatchObject({ committed: 0, stalled: true, frontierAgeMs: 60_000 });
      expect(second.reasons.map((r) => r.code)).toEqual([PlanReasonCode.UpToDate, PlanReasonCode.Stalled]);

      await store.markDone(ref, [0]);
      clock += 60_000;
      const third = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group), now });
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
      const other = await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 30_000);
      expect(other).toBeDefined();

      // Act
      const skipped = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });

      // Assess
      expect(skipped).toMatchObject({ skipped: 'lease-held', moves: [], partitions: [] });
      expect(await committedOf(completionGroupId(group), topic)).toEqual([-1]);
      expect(await other?.release()).toBe(true);
      const after = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      expect(after.skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([5]);
      // A run releases its lease: the next one gets it at once.
      expect((await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) })).skipped).toBeUndefined();
    });

    it('never moves back while two runs race each other and offsets keep finishing (20 rounds)', async () => {
      // Prepare: 3 partitions of 200 offsets, finished chunk by chunk in a shuffled order. On even rounds
      // the lowest offset of the chunk is held back to the next round, so the frontier moves on every
      // other round and the runs meet both "nothing to move" and "commit" states.
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
          runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) }),
          runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) }),
          ...marks,
        ]);
        const results = [a, b] as CommitterResult[];
        skipped += results.filter((r) => r.skipped === 'lease-held').length;
        expect(results.some((r) => r.skipped === undefined)).toBe(true);
        seen.push(await committedOf(completionGroupId(group), topic));
      }
      await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
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
      // Prepare: a commit call slower than the lease's time to live
      const group = uniqueName('grp');
      const topic = await topicWithRecords(2, 5);
      for (const topicPartition of [0, 1]) {
        await store.admit({ group, topic, partition: topicPartition }, records(range(0, 4)));
        await store.markDone({ group, topic, partition: topicPartition }, range(0, 4));
      }
      const real = new MemberlessOffsetCommitter(kafka, group);
      const slow: OffsetCommitter = {
        groupId: real.groupId,
        fetchCommitted: (names) => real.fetchCommitted(names),
        commit: async (moves) => {
          await sleep(1_200);
          await real.commit(moves);
        },
      };

      // Act / Assess
      await expect(runCommitter({ store, committer: slow, group, leaseTtlMs: 1_000 })).rejects.toBeInstanceOf(LeaseLostError);
      // The lease was not held by anyone else: the next run (with a sane lease) finishes the job.
      const next = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      expect(next.skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([5, 5]);
    });

    it('throws when a commit did not land, read back from Kafka', async () => {
      // Prepare: a committer that reads the real group but drops its commits, as kafkajs can
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 5);
      await store.admit({ group, topic, partition: 0 }, records(range(0, 4)));
      await store.markDone({ group, topic, partition: 0 }, range(0, 2));
      const real = new MemberlessOffsetCommitter(kafka, group);
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
      expect((await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) })).skipped).toBeUndefined();
      expect(await committedOf(completionGroupId(group), topic)).toEqual([3]);
    });
    it('skips a deleted topic, reports it as topic-missing, and commits the other topics', async () => {
      // Prepare: two tracked topics, one deleted since its records were admitted
      const group = uniqueName('grp');
      const [kept, gone] = [await topicWithRecords(1, 10), await topicWithRecords(2, 10)];
      await store.admit({ group, topic: kept, partition: 0 }, records(range(0, 9)));
      await store.markDone({ group, topic: kept, partition: 0 }, range(0, 3));
      for (const partition of [0, 1]) {
        await store.admit({ group, topic: gone, partition }, records(range(0, 9)));
        await store.markDone({ group, topic: gone, partition }, range(0, 9));
      }
      await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });
      await deleteTopic(gone);
      await store.markDone({ group, topic: kept, partition: 0 }, range(4, 6));

      // Act
      const result = await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) });

      // Assess
      expect(result.moves).toEqual([{ topic: kept, partition: 0, from: 4, to: 7, metadata: MARKER }]);
      expect(await committedOf(completionGroupId(group), kept)).toEqual([7]);
      expect(result.partitions.map((p) => p.topic)).toEqual([kept]);
      expect(result.reasons).toEqual([
        expect.objectContaining({ topic: gone, partition: 0, code: PlanReasonCode.TopicMissing }),
        expect.objectContaining({ topic: gone, partition: 1, code: PlanReasonCode.TopicMissing }),
      ]);
    });

    it('fails with GroupHasMembersError, commits nothing and releases its lease while the completion group has a member', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 10);
      await store.admit({ group, topic, partition: 0 }, records(range(0, 9)));
      await store.markDone({ group, topic, partition: 0 }, range(0, 4));
      const intruder = await liveMember(completionGroupId(group), topic);

      try {
        // Act / Assess
        await expect(runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) })).rejects.toBeInstanceOf(GroupHasMembersError);
        expect(await committedOf(completionGroupId(group), topic)).toEqual([-1]);
      } finally {
        await intruder.disconnect();
      }
      expect((await runCommitter({ store, group, committer: new MemberlessOffsetCommitter(kafka, group) })).moves).toEqual([{ topic, partition: 0, from: undefined, to: 5, metadata: MARKER }]);
    });
  });

  describe('with ConsumerOffsetCommitter (a member of the live group)', () => {
    let consumer: Consumer | undefined;

    afterEach(async () => {
      await consumer?.disconnect();
      consumer = undefined;
    });

    /** A running member of `group` on `topic`, disconnected after the test. */
    async function member(group: string, topic: string): Promise<Consumer> {
      consumer = await liveMember(group, topic);
      return consumer;
    }

    it('commits the frontier as a member of the group', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(2, 30);
      const live = await member(group, topic);
      await store.admit({ group, topic, partition: 0 }, records(range(0, 29)));
      await store.markDone({ group, topic, partition: 0 }, [...range(0, 19), 21]);
      await store.admit({ group, topic, partition: 1 }, records(range(0, 29)));
      await store.markDone({ group, topic, partition: 1 }, range(0, 29));

      // Act
      const result = await runCommitter({ store, group, committer: new ConsumerOffsetCommitter({ consumer: live, admin, groupId: group }) });

      // Assess
      expect(result.groupId).toBe(group);
      expect(await committedOf(group, topic)).toEqual([20, 30]);
      expect(result.partitions.map((p) => p.committed)).toEqual([20, 30]);
      // The live group cannot be written through the admin API: that is what ConsumerOffsetCommitter is for.
      await expect(
        admin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '25' }] }),
      ).rejects.toThrow(/no running instances/);

      // And it only moves forward from there.
      await store.markDone({ group, topic, partition: 0 }, [20]);
      await runCommitter({ store, group, committer: new ConsumerOffsetCommitter({ consumer: live, admin, groupId: group }) });
      expect(await committedOf(group, topic)).toEqual([22, 30]); // 21 was done already
    });

    it('fails loudly, and releases its lease, when the consumer is not running', async () => {
      // Prepare
      const group = uniqueName('grp');
      const topic = await topicWithRecords(1, 5);
      const live = await member(group, topic);
      await live.stop();
      await store.admit({ group, topic, partition: 0 }, records(range(0, 4)));
      await store.markDone({ group, topic, partition: 0 }, range(0, 4));

      // Act / Assess
      await expect(runCommitter({ store, group, committer: new ConsumerOffsetCommitter({ consumer: live, admin, groupId: group }) })).rejects.toThrow();
      expect(await committedOf(group, topic)).toEqual([-1]);
      const lease = await CommitterLease.acquire(new CompletionStore(redis).committerState(group), 1_000);
      expect(lease).toBeDefined();
      await lease?.release();
    });
  });
});
