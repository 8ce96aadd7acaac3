/**
 * The offline Kafka trigger (src/serverless/offline) on the real broker, in a real consumer group, with the
 * Lambda runtime played in this process (test/integration/serverless-offline.test.ts runs it under a real
 * `serverless offline`): a slow invocation holds only its own partition, an invocation longer than the
 * consumer's session keeps the member in its group (no batch delivered again), rebalances in the middle of
 * invocations lose no record and leave no partition paused, and an event holding several partitions runs
 * through the framework's own handler.
 */
import type { Context } from 'aws-lambda';
import type { Admin } from 'kafkajs';
import { lanes } from '../../src';
import type { AwsKafkaEvent } from '../../src/event/types';
import { deadLetterTopic, retryTopic } from '../../src/options';
import type { MappingSpec } from '../../src/serverless/offline/mapping';
import { OfflineKafkaTrigger } from '../../src/serverless/offline/trigger';
import { inProcessLambda, type InProcessHandler } from './support/in-process-lambda';
import { contextWithin, produce } from './support/kafka-events';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, REDIS_URL, uniqueName } from './support/stack';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const topics: string[] = [];
const triggers: OfflineKafkaTrigger[] = [];
let admin: Admin;

beforeAll(async () => {
  admin = createKafka().admin();
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(triggers.map((trigger) => trigger.stop()));
  await admin.disconnect();
  await deleteTopics(topics);
});

async function newTopic(prefix: string, partitions: number): Promise<string> {
  const topic = uniqueName(prefix);
  topics.push(topic);
  await createTopic(topic, partitions);
  return topic;
}

function spec(topic: string, settings: Partial<MappingSpec> = {}): MappingSpec {
  return {
    functionKey: 'fn',
    topic,
    groupId: `${topic}-esm`,
    batchSize: 100,
    batchingWindowMs: 100,
    startingPosition: 'TRIM_HORIZON',
    startingPositionTimestamp: undefined,
    reportBatchItemFailures: false,
    brokers: KAFKA_BROKERS,
    eventSource: { source: 'SelfManagedKafka' },
    mixPartitions: true,
    sessionTimeoutMs: 30_000,
    ...settings,
  };
}

async function startTrigger(mapping: MappingSpec, handler: InProcessHandler): Promise<OfflineKafkaTrigger> {
  const warnings: string[] = [];
  const trigger = new OfflineKafkaTrigger(inProcessLambda({ fn: handler }), {
    specs: [mapping],
    committers: [],
    custom: { offline: { retryDelay: '100ms', retryMaxDelay: '1s' } },
    log: { notice: () => undefined, warning: (message) => warnings.push(message) },
  });
  triggers.push(trigger);
  await trigger.start();
  return trigger;
}

/** Waits for a condition, polling; fails naming it (the limit only bounds a broken run). */
async function waitFor(condition: () => boolean | Promise<boolean>, description: string, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function committed(groupId: string, topic: string): Promise<Map<number, number>> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((offsets?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
}

function partitionsOf(event: unknown): Array<{ partition: number; offsets: number[] }> {
  return Object.values((event as AwsKafkaEvent).records).map((list) => ({ partition: list[0]!.partition, offsets: list.map((r) => r.offset) }));
}

describe('the offline Kafka trigger on the local broker', () => {
  it('keeps a partition flowing while another partition’s invocation outlasts the consumer session, and delivers that one once', async () => {
    // Prepare: a 6 s session; partition 0's first invocation is held open for at least 10 s and until partition 1
    // has had all its records delivered.
    const topic = await newTopic('kl-offline-slow', 2);
    const deliveries: Array<{ partition: number; offset: number }> = [];
    let gateOpen = false;
    let slowStarted = 0;
    const handler: InProcessHandler = async (event) => {
      const parts = partitionsOf(event);
      for (const { partition, offsets } of parts) for (const offset of offsets) deliveries.push({ partition, offset });
      if (parts.some((p) => p.partition === 0) && slowStarted === 0) {
        slowStarted = Date.now();
        while (!gateOpen || Date.now() - slowStarted < 10_000) await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await startTrigger(spec(topic, { sessionTimeoutMs: 6_000, mixPartitions: false }), handler);
    await produce(topic, [{ key: null, value: 'slow', partition: 0 }]);
    await waitFor(() => slowStarted > 0, 'the slow invocation to start');

    // Act: partition 1 gets records in five rounds while partition 0's invocation is still running (it cannot
    // return before the gate opens).
    for (let round = 0; round < 5; round += 1) {
      await produce(topic, [0, 1].map((i) => ({ key: null, value: `fast-${round}-${i}`, partition: 1 })));
      await waitFor(() => deliveries.filter((d) => d.partition === 1).length === 2 * (round + 1), `round ${round} of partition 1`);
    }
    gateOpen = true;
    // A record after the slow one: once it is delivered, anything delivered again before it has been too.
    await waitFor(async () => (await committed(`${topic}-esm`, topic)).get(0) === 1, 'the commit of the slow record');
    await produce(topic, [{ key: null, value: 'after', partition: 0 }]);
    await waitFor(() => deliveries.some((d) => d.partition === 0 && d.offset === 1), 'the record after the slow one');

    // Assess
    expect(deliveries.filter((d) => d.partition === 0).map((d) => d.offset)).toEqual([0, 1]);
    expect(deliveries.filter((d) => d.partition === 1).map((d) => d.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await waitFor(async () => {
      const offsets = await committed(`${topic}-esm`, topic);
      return offsets.get(0) === 2 && offsets.get(1) === 10;
    }, 'the commits of both partitions');
  }, 180_000);

  it('goes on through rebalances while invocations are in flight: every record delivered, in order per partition, no partition left paused', async () => {
    // Prepare: round 1's invocations wait at a gate, so the first member is mid-invocation on both partitions
    // when a second member joins and takes one of them away.
    const topic = await newTopic('kl-offline-rebalance', 2);
    const mapping = spec(topic, { batchSize: 5, mixPartitions: true });
    const delivered = new Map<number, number[]>();
    let gateOpen = true;
    let waiting = 0;
    const handler: InProcessHandler = async (event) => {
      for (const { partition, offsets } of partitionsOf(event)) delivered.set(partition, [...(delivered.get(partition) ?? []), ...offsets]);
      waiting += 1;
      while (!gateOpen) await new Promise((resolve) => setTimeout(resolve, 50));
      waiting -= 1;
    };
    const send = (round: number): Promise<void> =>
      produce(topic, Array.from({ length: 20 }, (_, i) => ({ key: null, value: `${round}-${i}`, partition: i % 2 })));
    const committedToEnd = async (): Promise<boolean> => {
      const [ends, offsets] = await Promise.all([admin.fetchTopicOffsets(topic), committed(mapping.groupId, topic)]);
      return ends.every(({ partition, high }) => offsets.get(partition) === Number(high));
    };
    await startTrigger(mapping, handler);
    await send(0);
    await waitFor(committedToEnd, 'round 0 committed');
    gateOpen = false;
    await send(1);
    await waitFor(() => [0, 1].every((p) => (delivered.get(p) ?? []).includes(10)), 'round 1 in flight on both partitions');

    // Act: a second member joins while those invocations wait; then it leaves again, and the first gets every
    // partition back, the one taken away included.
    const second = await startTrigger(mapping, handler);
    gateOpen = true;
    await waitFor(committedToEnd, 'round 1 committed');
    await second.stop();
    await send(2);
    await waitFor(committedToEnd, 'round 2 committed');

    // Assess: every record at least once (a revoked partition's records again, from its last commit), and each
    // partition's first deliveries in offset order.
    expect(waiting).toBe(0);
    for (const partition of [0, 1]) {
      const offsets = delivered.get(partition) ?? [];
      expect(new Set(offsets)).toEqual(new Set(Array.from({ length: 30 }, (_, i) => i)));
      const firstSeen = offsets.filter((offset, i) => offsets.indexOf(offset) === i);
      expect(firstSeen).toEqual([...firstSeen].sort((x, y) => x - y));
    }
  }, 240_000);

  it('runs events holding several partitions through the framework’s handler: every record once, in order per key', async () => {
    // Prepare: the records are in the topic before the trigger starts, so its first fetch returns every partition.
    const topic = await newTopic('kl-offline-mix', 3);
    const group = uniqueName('kl-offline-mix-grp');
    for (const tier of ['5s', '1m', '10m']) await createTopic(retryTopic(group, tier), 1);
    await createTopic(deadLetterTopic(group), 1);
    topics.push(...['5s', '1m', '10m'].map((tier) => retryTopic(group, tier)), deadLetterTopic(group));
    const messages = [];
    for (let seq = 1; seq <= 10; seq += 1) for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) messages.push({ key, value: JSON.stringify({ key, seq }) });
    await produce(topic, messages);
    const seen = new Map<string, number[]>();
    const lanesHandler = lanes({ group, redis: { url: REDIS_URL }, kafka: { brokers: KAFKA_BROKERS }, concurrency: 10 }, async (record) => {
      const { key, seq } = record.value as { key: string; seq: number };
      seen.set(key, [...(seen.get(key) ?? []), seq]);
    });
    const events: Array<Array<{ partition: number; offsets: number[] }>> = [];
    const responses: unknown[] = [];
    const handler: InProcessHandler = async (event) => {
      events.push(partitionsOf(event));
      const response = await lanesHandler(event as AwsKafkaEvent, contextWithin(60_000) as unknown as Context);
      responses.push(response);
      return response;
    };

    try {
      // Act
      await startTrigger(spec(topic, { batchSize: 40, mixPartitions: true }), handler);
      const ends = await admin.fetchTopicOffsets(topic);
      await waitFor(async () => {
        const offsets = await committed(`${topic}-esm`, topic);
        return ends.every(({ partition, high }) => offsets.get(partition) === Number(high));
      }, 'the commits at the end offsets');

      // Assess
      expect(events[0]!.length).toBeGreaterThan(1);
      expect(events.every((parts) => parts.reduce((n, p) => n + p.offsets.length, 0) <= 40)).toBe(true);
      const all = Array.from({ length: 10 }, (_, i) => i + 1);
      expect(Object.fromEntries(seen)).toEqual({ a: all, b: all, c: all, d: all, e: all, f: all });
      expect(responses.every((response) => JSON.stringify(response) === '{"batchItemFailures":[]}')).toBe(true);
    } finally {
      await lanesHandler.close();
    }
  });
});
