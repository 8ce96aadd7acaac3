/**
 * One event far larger than one admission chunk, on a real broker and real Redis: records of early chunks
 * run while later chunks are admitted, a failing head's followers (from every chunk) are parked and run in
 * order after its retry, and the committed frontier reaches the end of the partition.
 */
import { CompletionStore } from '../../src/completion/store';
import type { Cluster, Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { completionGroupId, MemberlessOffsetCommitter, runCommitter } from '../../src/committer';
import { parkKey, partitionKeys } from '../../src/completion';
import type { PartitionRef } from '../../src/ports/partition';
import { HandOffWriter } from '../../src/handoff';
import { resolveOptions } from '../../src/options';
import { LanesFunction, type RecordHandler } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RetryFeed } from './support/retry-feed';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, redisSetups, uniqueName } from './support/stack';

jest.setTimeout(120_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const COUNT = 3_000;
const KEYS = 20;
const TIERS = ['1s', '1m'];
const laneOf = (key: string): string => Buffer.from(key).toString('base64');
const keyOf = (offset: number): string => `k${offset % KEYS}`;
const offsetsOfKey = (key: string): number[] => Array.from({ length: COUNT }, (_, i) => i).filter((i) => keyOf(i) === key);

describe.each(redisSetups())('chunked admission on a real broker and Redis $name', ({ connect }) => {
  let redis: Redis | Cluster | undefined;
  let writer: HandOffWriter | undefined;
  let feed: RetryFeed | undefined;
  const topics: string[] = [];

  afterEach(async () => {
    await feed?.stop().catch(() => undefined);
    await writer?.disconnect().catch(() => undefined);
    redis?.disconnect();
    await deleteTopics(topics.splice(0)).catch(() => undefined);
  });

  it('runs 3,000 records over 20 keys of one event once each in offset order per key; k3 after its retry; the commit reaches the end', async () => {
    // Prepare: one partition; k3's first record (offset 3, in the first chunk) fails once.
    const group = uniqueName('cgrp');
    const topic = uniqueName('csrc');
    const retryTopics = TIERS.map((t) => `${group}.retry.${t}`);
    topics.push(topic, ...retryTopics, `${group}.dlq`);
    await Promise.all(topics.map((t) => createTopic(t, 1)));
    const options = resolveOptions({
      group, concurrency: 100, flushIntervalMs: 20, retry: { tiers: TIERS, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 300 } },
    }, {});
    redis = connect();
    const kafka = new Kafka({ clientId: 'chunked-admission-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
    writer = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
    const runs: Array<{ key: string; offset: number; attempt: number }> = [];
    const handler: RecordHandler = async (record, ctx) => {
      runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt });
      if (record.origin.offset === 3 && ctx.attempt === 1) throw new Error('k3 fails once');
      if (record.origin.offset % 5 === 0) await new Promise((resolve) => setImmediate(resolve));
    };
    const processor = new LanesFunction({ options, handler, store: new CompletionStore(redis, options.caps), handOff: () => writer!, telemetry: createTelemetry(group) });
    const ref: PartitionRef = { group, topic, partition: 0 };
    feed = await RetryFeed.start(retryTopics);
    await produce(topic, Array.from({ length: COUNT }, (_, i) => ({ key: keyOf(i), value: JSON.stringify({ i }) })));
    const records = await fetchRecords(topic, COUNT);
    expect(records.map((r) => r.offset)).toEqual(Array.from({ length: COUNT }, (_, i) => i));

    // Act: the whole partition in one event.
    const response = await processor.process(eventOf(records), contextWithin(60_000));

    // Assess: every other key ran once in offset order; k3 ran only its head, its 149 followers are parked.
    expect(response.batchItemFailures).toEqual([]);
    expect(runs.filter((run) => run.key === 'k3')).toEqual([{ key: 'k3', offset: 3, attempt: 1 }]);
    expect(await redis.llen(parkKey(ref, laneOf('k3')))).toBe(offsetsOfKey('k3').length - 1);
    expect(await redis.hlen(partitionKeys(ref).lanes)).toBe(1);

    // Act: the retry copy comes back to the function as a retry event; it runs the head, then drains the lane.
    await feed.feedUntil(
      (event, context) => processor.process(event, context),
      async () => (await redis!.hlen(partitionKeys(ref).lanes)) === 0 && runs.filter((run) => run.key === 'k3').length === offsetsOfKey('k3').length + 1,
      60_000,
    );
    const result = await runCommitter({ store: processor.store, group, committer: new MemberlessOffsetCommitter(createKafka(), group) });

    // Assess
    for (let k = 0; k < KEYS; k += 1) {
      const key = `k${k}`;
      const expected = key === 'k3' ? [3, ...offsetsOfKey(key)] : offsetsOfKey(key);
      expect({ key, offsets: runs.filter((run) => run.key === key).map((run) => run.offset) }).toEqual({ key, offsets: expected });
    }
    expect(runs.filter((run) => run.attempt > 1)).toEqual([{ key: 'k3', offset: 3, attempt: 2 }]);
    expect(await redis.llen(parkKey(ref, laneOf('k3')))).toBe(0);
    expect((await processor.store.frontier(ref))?.frontier).toBe(COUNT);
    expect(result.skipped).toBeUndefined();
    const admin = createKafka().admin();
    await admin.connect();
    try {
      const [committed] = await admin.fetchOffsets({ groupId: completionGroupId(group), topics: [topic] });
      expect(committed?.partitions.map((p) => Number(p.offset))).toEqual([COUNT]);
    } finally {
      await admin.disconnect();
    }
  });
});
