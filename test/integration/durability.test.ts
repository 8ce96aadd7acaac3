import type { Cluster, Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { scanKeys } from '../../src/completion/redis-scan';
import { eventSourcePositions, MemberlessOffsetCommitter, runCommitter, type CommitterResult, type RunCommitterOptions } from '../../src/committer';
import { CompletionStore, escapeName, parkKey, partitionKeys, trackedPartitionsKey } from '../../src/completion';
import type { PartitionRef } from '../../src/ports/partition';
import { HandOffWriter } from '../../src/handoff';
import { RECOVERY_RECHECK_MS } from '../../src/durability/first-minute';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { LanesFunction, type LanesRecord } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RetryFeed } from './support/retry-feed';
import { runCliCaptured } from './support/cli';
import { createKafka, createTopic, KAFKA_BROKERS, REDIS_URL, redisSetups, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TIERS = ['1s', '1m'];
/** The history: 20 records over keys A, B and C on one partition; A has 7 of them. */
const KEYS = ['A', 'B', 'A', 'C', 'A', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'C', 'B'];
const A_OFFSETS = KEYS.flatMap((key, offset) => (key === 'A' ? [offset] : []));

interface Setup {
  group: string;
  topic: string;
  ref: PartitionRef;
  options: ReturnType<typeof resolveOptions>;
  redis: Redis | Cluster;
  kafka: Kafka;
  writer: HandOffWriter;
  processor: LanesFunction;
  feed: RetryFeed;
  /** Every run: key, origin offset, attempt, and whether it started after the loss. */
  runs: Array<{ key: string; offset: number; attempt: number; afterLoss: boolean }>;
  lost: boolean;
  /** How far the functions' clock runs ahead of the real one: a copy due later is made due by moving it. */
  skew: number;
  /** The lane A's records wait in: A's own, or the partition's one lane under `ordering: 'partition'`. */
  laneA: string;
}

interface Shape {
  /** A committer run before the loss (the durable marker exists); `false`: the partition's first minute. */
  committed?: boolean;
  /** `deadLetter.policy: 'hold'` with one attempt: A's first record is dead-lettered at once and holds its lane. */
  hold?: boolean;
  ordering?: 'key' | 'partition';
}

const open: Setup[] = [];

afterAll(async () => {
  await Promise.all(open.map(async (s) => {
    await s.feed.stop().catch(() => undefined);
    await s.writer.disconnect().catch(() => undefined);
    s.redis.disconnect();
  }));
});

/**
 * The table, before the loss: A's first record failed once, its lane is blocked and its six followers parked.
 * `committed: false`: no committer run yet (the partition's first minute: no durable marker).
 */
async function setUp(connect: () => Redis | Cluster, { committed = true, hold = false, ordering = 'key' }: Shape = {}): Promise<Setup> {
  const group = uniqueName('dgrp');
  const topic = uniqueName('dsrc');
  await createTopic(topic, 1);
  await Promise.all([...TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
  const options = resolveOptions({
    group, flushIntervalMs: 20, ordering, retry: { tiers: TIERS, maxAttempts: hold ? 1 : 3, backoff: { type: 'fixed', delayMs: 300 } },
    ...(hold ? { deadLetter: { policy: 'hold' } } : {}),
  } as LanesOptionsInput, {});
  const redis = connect();
  const kafka = new Kafka({ clientId: 'durability-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
  const laneA = ordering === 'partition' ? '*' : laneOf('A');
  const s = { group, topic, ref: { group, topic, partition: 0 }, options, redis, kafka, writer, runs: [], lost: false, skew: 0, laneA } as unknown as Setup;
  let failedOnce = false;
  s.processor = new LanesFunction({
    options, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group), now: () => Date.now() + s.skew,
    handler: (record: LanesRecord, ctx) => {
      s.runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt, afterLoss: s.lost });
      if (record.origin.offset === 0 && !failedOnce) {
        failedOnce = true;
        throw new Error('A fails once');
      }
    },
  });
  s.feed = await RetryFeed.start(TIERS.map((t) => `${group}.retry.${t}`));
  open.push(s);

  await produce(topic, KEYS.map((key) => ({ key, value: '{}' })));
  const response = await s.processor.process(eventOf(await fetchRecords(topic, KEYS.length)), contextWithin(60_000));
  expect(response.batchItemFailures).toEqual([]);
  if (committed) {
    // A committer run before the loss: the durable group gets its marker, and stops at A's blocked head.
    const before = await commit(s);
    expect(before.moves).toEqual([expect.objectContaining({ topic, partition: 0, to: 0 })]);
  }
  expect(await redis.llen(parkKey(s.ref, laneA))).toBe(ordering === 'partition' ? KEYS.length - 1 : 6);
  return s;
}

async function until(condition: () => boolean): Promise<void> {
  const giveUpAt = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > giveUpAt) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function laneOf(key: string): string {
  return Buffer.from(key).toString('base64');
}

function commit(s: Setup, eventSource?: RunCommitterOptions['eventSource']): Promise<CommitterResult> {
  return runCommitter({
    store: s.processor.store,
    group: s.group,
    committer: new MemberlessOffsetCommitter(createKafka(), s.group),
    ...(eventSource === undefined ? {} : { eventSource }),
    redrive: { store: s.processor.store, options: s.options, sink: s.writer },
    recovery: { parts: { store: new CompletionStore(s.redis), kafka: s.kafka, options: s.options, sink: s.writer } },
  });
}

/** Every key of the group: the partitions' state, the tracked set, the committer's readings and lease. */
async function groupKeys(s: Setup): Promise<string[]> {
  const escaped = escapeName(s.group);
  return [...await scanKeys(s.redis, `{kl:${escaped}:*`), ...await scanKeys(s.redis, `{kl:${escaped}}*`)];
}

const LOSSES: Array<[string, (s: Setup) => Promise<void>]> = [
  ['every key of the group', async (s) => {
    for (const key of await groupKeys(s)) await s.redis.del(key);
  }],
  ['the park list only', async (s) => {
    await s.redis.del(parkKey(s.ref, laneOf('A')));
  }],
  ['the lanes hash only', async (s) => {
    await s.redis.del(partitionKeys(s.ref).lanes);
  }],
];

describe.each(redisSetups())('Redis losing state on $name Redis: no record is lost', ({ connect }) => {
  it.each(LOSSES)('when Redis loses %s, each of A\'s records runs, in order, after the loss', async (_, lose) => {
    // Prepare
    const s = await setUp(connect);

    // Act: the loss, then what the functions do next: the retry copy comes, a committer run, the rest of the copies.
    s.lost = true;
    await lose(s);
    await until(() => s.feed.pending > 0);
    expect((await s.processor.process(eventOf(s.feed.take()), contextWithin(60_000))).batchItemFailures).toEqual([]);
    const run = await commit(s);
    await s.feed.feedUntil(
      (event, context) => s.processor.process(event, context),
      async () => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0,
    );

    // Assess: the loss was found and the partition recovered from the durable frontier, 0.
    expect(run.losses).toEqual([expect.objectContaining({ topic: s.topic, partition: 0, committed: 0, recovered: expect.objectContaining({ from: 0, to: 20 }) })]);
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    // In order: a record of A never runs after a later one of A (a head may run twice: at-least-once).
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
    // The durable group moves on once everything is terminal again.
    const after = await commit(s);
    expect(after.losses).toBeUndefined();
    expect(after.partitions.find((p) => p.topic === s.topic)?.committed).toBe(20);
  });
});

describe('done bits lost after the trigger moved past them', () => {
  it("is found through the trigger's own consumer group, and every record of the partition runs again, A's in order", async () => {
    // Prepare: the trigger committed the whole batch in its group `<group>` (the invocation returned).
    const s = await setUp(redisSetups()[0]!.connect);
    const admin = s.kafka.admin();
    await admin.connect();
    try {
      await admin.setOffsets({ groupId: s.group, topic: s.topic, partitions: [{ partition: 0, offset: String(KEYS.length) }] });
      const eventSource = eventSourcePositions(() => Promise.resolve(admin), s.group);

      // Act: the done bits are lost (the rest of the state is whole), then the committer runs, without and with
      // what the trigger committed.
      s.lost = true;
      await s.redis.del(partitionKeys(s.ref).bits);
      const blind = await commit(s);
      const run = await commit(s, eventSource);
      await s.feed.feedUntil(
        (event, context) => s.processor.process(event, context),
        async () => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0,
      );

      // Assess: without the trigger's position the loss is invisible (nothing below the frontier says so); with it,
      // found and recovered from the durable frontier; every record runs again, A's in order.
      expect(blind.losses).toBeUndefined();
      expect(run.losses).toEqual([expect.objectContaining({ topic: s.topic, partition: 0, reason: 'passed-not-done', recovered: expect.objectContaining({ from: 0, to: 20 }) })]);
      const afterLoss = s.runs.filter((r) => r.afterLoss);
      expect(new Set(afterLoss.map((r) => r.offset))).toEqual(new Set(KEYS.map((_, offset) => offset)));
      const aRuns = afterLoss.filter((r) => r.key === 'A').map((r) => r.offset);
      expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
      const after = await commit(s, eventSource);
      expect(after.losses).toBeUndefined();
      expect(after.partitions.find((p) => p.topic === s.topic)?.committed).toBe(20);
    } finally {
      await admin.disconnect();
    }
  });
});

describe("the partition's first minute: Redis loses its state before the committer's first commit", () => {
  it("a later batch's state lets the first commit pass A's records; A's retry copy reports it, the completion group moves back, A's 7 run in order", async () => {
    // Prepare: A's head failed, its six followers parked, no committer run yet: no durable marker. Then Redis loses
    // every key, and a second batch (B and C) makes a new state, born at 20.
    const s = await setUp(redisSetups()[0]!.connect, { committed: false });
    s.lost = true;
    for (const key of await groupKeys(s)) await s.redis.del(key);
    await produce(s.topic, ['B', 'C', 'B', 'C'].map((key) => ({ key, value: '{}' })));
    const second = (await fetchRecords(s.topic, KEYS.length + 4)).slice(KEYS.length);
    expect((await s.processor.process(eventOf(second), contextWithin(60_000))).batchItemFailures).toEqual([]);
    // Within a minute every process adds the partitions it admits on to the tracked set again (docs/durability.md).
    await s.redis.sadd(trackedPartitionsKey(s.group), `${s.topic}\n0`);
    const fetchCommitted = async (): Promise<number | undefined> =>
      (await new MemberlessOffsetCommitter(createKafka(), s.group).fetchCommitted([s.topic])).find((c) => c.partition === 0)?.offset;

    // Act: the committer's first commit (nothing durable to check against), then A's retry copy, then a committer
    // run, then the copies the recovery re-drives.
    const first = await commit(s);
    const passed = await fetchCommitted();
    await until(() => s.feed.pending > 0);
    expect((await s.processor.process(eventOf(s.feed.take()), contextWithin(60_000))).batchItemFailures).toEqual([]);
    const run = await commit(s);
    const rewound = await fetchCommitted();
    await s.feed.feedUntil(
      (event, context) => s.processor.process(event, context),
      async () => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0,
    );

    // Assess: the first commit found nothing and passed A's records (the gap this closes); the copy, older than the
    // state, reported its origin; the committer moved the completion group back to it and recovered from there.
    expect(first.losses).toBeUndefined();
    expect(passed).toBe(KEYS.length + 4);
    expect(run.losses).toEqual([expect.objectContaining({
      topic: s.topic, partition: 0, reason: 'reported-by-retry-copy', committed: KEYS.length + 4, rewoundTo: 0,
      recovered: expect.objectContaining({ from: 0, to: KEYS.length + 4 }),
    })]);
    expect(rewound).toBe(0);
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
    // Once everything is terminal again the durable group moves on, and a stale copy (the held one) moves nothing back.
    const after = await commit(s);
    expect(after.losses).toBeUndefined();
    expect(await fetchCommitted()).toBe(KEYS.length + 4);
  });

  it('with no later batch, the copy finds no state, reports it, and the committer recovers from the earliest offset', async () => {
    // Prepare: as above, without the second batch: no state at all when the copy comes, the tracked set lost too.
    const s = await setUp(redisSetups()[0]!.connect, { committed: false });
    s.lost = true;
    for (const key of await groupKeys(s)) await s.redis.del(key);

    // Act
    await until(() => s.feed.pending > 0);
    expect((await s.processor.process(eventOf(s.feed.take()), contextWithin(60_000))).batchItemFailures).toEqual([]);
    const run = await commit(s);
    const marked = (await new MemberlessOffsetCommitter(createKafka(), s.group).fetchCommitted([s.topic])).find((c) => c.partition === 0);
    await s.feed.feedUntil(
      (event, context) => s.processor.process(event, context),
      async () => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0,
    );

    // Assess: nothing committed yet, so the recovery reads the partition from its earliest offset, and commits its
    // marker there at once: a second loss before the next run is found against it.
    expect(marked).toEqual(expect.objectContaining({ offset: 0, metadata: expect.stringMatching(/^kl1:[0-9a-f]+:-1:0$/) }));
    expect(run.losses).toEqual([expect.objectContaining({
      topic: s.topic, partition: 0, reason: 'reported-by-retry-copy', committed: undefined, recovered: expect.objectContaining({ from: 0, to: KEYS.length }),
    })]);
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
    const after = await commit(s);
    expect(after.losses).toBeUndefined();
    expect(after.partitions.find((p) => p.topic === s.topic)?.committed).toBe(KEYS.length);
  });
});

/**
 * Delivers the retry copies as they arrive and runs the committer after each delivery, as the deployed functions do,
 * the functions' clock moving half a minute each round (a copy held for a recovery, a watch copy, comes back), until
 * every record of A ran after the loss and no lane is blocked. Returns the committer runs, in order.
 */
async function settle(s: Setup): Promise<CommitterResult[]> {
  const runs: CommitterResult[] = [];
  const giveUpAt = Date.now() + 120_000;
  const done = async (): Promise<boolean> => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0;
  while (!(await done())) {
    if (Date.now() > giveUpAt) throw new Error(`not settled: ${JSON.stringify(s.runs.filter((r) => r.afterLoss))}`);
    s.skew += RECOVERY_RECHECK_MS;
    const copies = s.feed.take();
    if (copies.length > 0) expect((await s.processor.process(eventOf(copies), contextWithin(60_000))).batchItemFailures).toEqual([]);
    runs.push(await commit(s));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return runs;
}

const FIRST_MINUTE: Array<[string, Shape, (s: Setup) => Promise<void>]> = [
  ["`hold`: A's head dead-lettered and held, its 6 followers parked, every key lost, then a later batch", { committed: false, hold: true }, async (s) => {
    for (const key of await groupKeys(s)) await s.redis.del(key);
    await produce(s.topic, ['B', 'C', 'B', 'C'].map((key) => ({ key, value: '{}' })));
    const second = (await fetchRecords(s.topic, KEYS.length + 4)).slice(KEYS.length);
    expect((await s.processor.process(eventOf(second), contextWithin(60_000))).batchItemFailures).toEqual([]);
  }],
  ["`ordering: 'partition'`: the partition's one lane blocked on A's head, the lanes hash lost", { committed: false, ordering: 'partition' }, async (s) => {
    await s.redis.del(partitionKeys(s.ref).lanes);
  }],
  ["`hold`, the marker committed: a held lane after a recovery", { committed: true, hold: true }, async (s) => {
    for (const key of await groupKeys(s)) await s.redis.del(key);
  }],
];

describe("the partition's first minute, and held lanes: every shape the histories play", () => {
  it.each(FIRST_MINUTE)('%s: found, recovered in one committer run, A\'s records all run again in order', async (_, shape, lose) => {
    // Prepare
    const s = await setUp(redisSetups()[0]!.connect, shape);

    // Act: the loss, then the functions as deployed: copies delivered, the committer run after each delivery.
    s.lost = true;
    await lose(s);
    const runs = await settle(s);

    // Assess: one run found the loss and recovered the partition; the records A's lane held (a held head's parked
    // followers too) all ran after the loss, in order. The recovered head ran again (its hold is not kept: it
    // succeeded this time, so its lane moved on). No later run found anything.
    const found = runs.filter((r) => r.losses !== undefined);
    expect(found).toHaveLength(1);
    expect(found[0]!.losses).toEqual([expect.objectContaining({ topic: s.topic, partition: 0, recovered: expect.objectContaining({ from: 0 }) })]);
    // The recovery wrote every recovered head's copy itself, due at once: its run's re-drive had nothing left to write.
    const { recovered } = found[0]!.losses![0]!;
    expect(recovered!.heads).toBe(recovered!.lanes);
    expect(found[0]!.redriven).toEqual([]);
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
    const after = await commit(s);
    expect(after.losses).toBeUndefined();
  });
});

describe("the partition's first minute, and a drained head: its invocation dies, then Redis loses every key", () => {
  it("the drain's watch copy reports the loss; recovered in one committer run, A's records all run again in order", async () => {
    // Prepare: A's head failed once, its six followers parked, no committer run yet (no durable marker).
    const s = await setUp(redisSetups()[0]!.connect, { committed: false });
    // A retry invocation that dies as it starts A's second record (offset 2), drained inline after the copy of A's
    // head succeeded: its Redis connection is cut there and its handler never returns, so nothing it would do later
    // takes effect (its done bits are never flushed), as after a SIGKILL.
    const doomedRedis = redisSetups()[0]!.connect();
    const doomed = new LanesFunction({
      options: resolveOptions({ ...s.options, recordTimeoutMs: 200 } as LanesOptionsInput, {}),
      store: new CompletionStore(doomedRedis, s.options.caps), handOff: () => s.writer, telemetry: createTelemetry(s.group), now: () => Date.now() + s.skew,
      handler: async (record: LanesRecord, ctx) => {
        if (record.origin.offset === A_OFFSETS[1]) {
          doomedRedis.disconnect();
          await new Promise(() => undefined);
        }
        s.runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt, afterLoss: s.lost });
      },
    });
    await until(() => s.feed.pending > 0);
    const headCopy = s.feed.take();
    s.skew += 1_000;

    // Act: the doomed drain; the trigger delivers its batch again (the copy finds its lane moved on to the drained
    // head, leased by the dead invocation); then Redis loses every key; then the functions as deployed.
    await doomed.process(eventOf(headCopy), contextWithin(60_000)).catch(() => undefined);
    expect((await s.processor.process(eventOf(headCopy), contextWithin(60_000))).batchItemFailures).toEqual([]);
    s.lost = true;
    for (const key of await groupKeys(s)) await s.redis.del(key);
    const runs = await settle(s);

    // Assess: one committer run found the loss (a watch copy reported it: no marker existed) and recovered the
    // partition from its earliest offset; A's records all ran after the loss, in order.
    const found = runs.filter((r) => r.losses !== undefined);
    expect(found).toHaveLength(1);
    expect(found[0]!.losses).toEqual([expect.objectContaining({
      topic: s.topic, partition: 0, reason: 'reported-by-retry-copy', recovered: expect.objectContaining({ from: 0 }),
    })]);
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
    expect((await commit(s)).losses).toBeUndefined();
  });
});

describe("the partition's first minute: a watch copy looks at its partition", () => {
  // Issue 39: only the committer's audit of a partition marks it (and ends its watch copies); a loss that took the
  // partition's tracked-set entry left its watch copies coming back every 5 s until a new record re-tracked it.
  it('puts an unmarked partition whose tracked-set entry was lost back in the set, so the committer audits it', async () => {
    // Prepare
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
    const group = uniqueName('watch');
    const store = new CompletionStore(redis);
    const ref: PartitionRef = { group, topic: uniqueName('orders'), partition: 0 };
    try {
      await store.admit(ref, [{ offset: 0 }]);
      await redis.del(trackedPartitionsKey(group));

      // Act
      const marked = await store.durablyMarked(ref);

      // Assess
      expect(marked).toBe(false);
      expect(await store.trackedPartitions(group)).toEqual([ref]);
    } finally {
      await redis.del(trackedPartitionsKey(group), ...Object.values(partitionKeys(ref)));
      await redis.quit();
    }
  });
});

describe('kafka-lanes recover', () => {
  it('finds the loss, recovers the partition by hand and prints what it did; status says a recovery happened', async () => {
    // Prepare
    const s = await setUp(redisSetups()[0]!.connect);
    s.lost = true;
    for (const key of await groupKeys(s)) await s.redis.del(key);

    // Act
    const { code, out } = await runCliCaptured('recover', s.group, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.feed.feedUntil(
      (event, context) => s.processor.process(event, context),
      async () => A_OFFSETS.every((o) => s.runs.some((r) => r.afterLoss && r.offset === o)) && (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0,
    );
    const status = await runCliCaptured('status', s.group, '--redis-url', REDIS_URL);

    // Assess
    expect(code).toBe(0);
    expect(out).toContain(`${s.topic}-0: state-missing`);
    expect(out).toContain('recovered: offsets 0..19 read again from Kafka: 20 records, 3 lanes rebuilt');
    expect(out).toContain('lane heads handed to the retry path: 3');
    const aRuns = s.runs.filter((r) => r.afterLoss && r.key === 'A').map((r) => r.offset);
    expect(aRuns).toEqual(A_OFFSETS);
    expect(status.out).toContain(`recovered from Kafka after Redis lost state: ${s.topic}-0 1x`);
  });
});
