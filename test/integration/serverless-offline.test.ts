/**
 * The offline Kafka trigger under a real `serverless offline start` on the local broker
 * (test/fixtures/offline-service): the exact AWS event reaches the handler, the event source mapping's
 * rules hold (batch size, one invocation in flight per partition, commit after success, the whole batch
 * again on error, partial batch responses in provisioned mode), and a kafka-lanes handler keeps per-key
 * order, dead-letters poison and has its completion group committed to the end offsets.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Admin, Producer } from 'kafkajs';
import { freePort, startServerlessOffline, type OfflineProcess } from '../../infra/local/demo/offline-process';
import { waitForTopicsReady } from '../../src/admin';
import { completionGroupId } from '../../src/committer';
import { decodeKafkaEvent, encodeKafkaEvent } from '../../src/event';
import type { AwsKafkaEvent } from '../../src/event/types';
import { deadLetterTopic, retryTopic } from '../../src/options';
import { createKafka, deleteTopics, REDIS_URL, uniqueName } from './support/stack';

const SERVICE = join(__dirname, '..', 'fixtures', 'offline-service');
const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/test/abcd-1';

const run = uniqueName('kl-offline');
const logFile = join(SERVICE, '..', '..', '..', '.local', `${run}.log`);
const rawTopic = uniqueName('kl-raw');
const partialTopic = uniqueName('kl-partial');
const orderedTopic = uniqueName('kl-ordered');
const group = uniqueName('kl-ordered-grp');
const lanesTopics = [retryTopic(group, '1s'), retryTopic(group, '2s'), deadLetterTopic(group)];
const keys = {
  events: (fn: string) => `kl-test:${run}:${fn}:events`,
  maxInFlight: (fn: string) => `kl-test:${run}:${fn}:max-in-flight`,
  failing: (fn: string) => `kl-test:${run}:${fn}:failing`,
  seqs: (key: string) => `kl-test:${run}:ordered:${key}`,
};

let offline: OfflineProcess;
let redis: Redis;
let admin: Admin;
let producer: Producer;

async function waitFor<T>(what: () => Promise<T>, done: (value: T) => boolean, description: string, timeoutMs = 90_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T;
  do {
    last = await what();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 250));
  } while (Date.now() < until);
  throw new Error(`timed out waiting for ${description}; last: ${JSON.stringify(last)}`);
}

async function events(fn: string): Promise<AwsKafkaEvent[]> {
  return (await redis.lrange(keys.events(fn), 0, -1)).map((text) => JSON.parse(text) as AwsKafkaEvent);
}

function offsetsOf(event: AwsKafkaEvent): number[] {
  return Object.values(event.records).flat().map((record) => record.offset);
}

async function committed(groupId: string, topic: string): Promise<Map<number, number>> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((offsets?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  admin = createKafka().admin();
  await admin.connect();
  producer = createKafka().producer();
  await producer.connect();
  // waitForTopicsReady: a KRaft broker answers UNKNOWN_TOPIC_OR_PARTITION for a moment after creating a topic.
  const topics = [
    { topic: rawTopic, numPartitions: 2 },
    { topic: partialTopic, numPartitions: 1 },
    { topic: orderedTopic, numPartitions: 3 },
    ...lanesTopics.map((topic) => ({ topic, numPartitions: 3 })),
  ];
  await admin.createTopics({ topics, waitForLeaders: false });
  await waitForTopicsReady(admin, topics.map((t) => t.topic), { timeoutMs: 60_000 });
  mkdirSync(join(SERVICE, '..', '..', '..', '.local'), { recursive: true });
  offline = await startServerlessOffline({
    cwd: SERVICE,
    logFile,
    env: {
      KL_TEST_RUN: run,
      KL_TEST_LAMBDA_PORT: String(await freePort()),
      KL_TEST_RAW_TOPIC: rawTopic,
      KL_TEST_PARTIAL_TOPIC: partialTopic,
      KL_TEST_ORDERED_TOPIC: orderedTopic,
      KL_TEST_ORDERED_GROUP: group,
    },
  });
});

afterAll(async () => {
  const code = await offline?.stop();
  await producer?.disconnect();
  await admin?.disconnect();
  await deleteTopics([rawTopic, partialTopic, orderedTopic, ...lanesTopics]);
  redis?.disconnect();
  // Ctrl-C ends serverless offline cleanly.
  expect(code).toBe(0);
});

describe('serverless offline with the kafka-lanes trigger', () => {
  it('delivers the exact AWS event: base64 key and value, signed-byte headers in order, "<topic>-<partition>" keys', async () => {
    // Prepare
    const headers = { 'trace-id': Buffer.from('abc'), lang: Buffer.from('ë€') };
    const [sent] = await producer.send({
      topic: rawTopic,
      messages: [{ partition: 0, key: Buffer.from('k-1'), value: Buffer.from('{"shape":true}'), headers, timestamp: '1700000000000' }],
    });

    // Act
    const [event] = await waitFor(() => events('raw'), (list) => list.length >= 1, 'the first raw event');

    // Assess
    const expected = encodeKafkaEvent({
      source: 'aws:kafka',
      eventSourceArn: ARN,
      bootstrapServers: ['127.0.0.1:9092'],
      records: [
        {
          topic: rawTopic,
          partition: 0,
          offset: Number(sent!.baseOffset),
          timestamp: 1700000000000,
          key: Buffer.from('k-1'),
          value: Buffer.from('{"shape":true}'),
          headers: [
            { name: 'trace-id', value: Buffer.from('abc') },
            { name: 'lang', value: Buffer.from('ë€') },
          ],
        },
      ],
    });
    expect(event).toEqual(expected);
    expect(event!.records[`${rawTopic}-0`]![0]!.headers[1]).toEqual({ lang: [-61, -85, -30, -126, -84] });
    expect(decodeKafkaEvent(event).partitions[0]!.records[0]!.value!.toString()).toBe('{"shape":true}');
  });

  it('keeps every event within batchSize (partitions together), one invocation in flight per partition, partitions in order', async () => {
    // Prepare
    const before = (await events('raw')).length;
    const messages = Array.from({ length: 20 }, (_, i) => ({ partition: i % 2, value: `r${i}` }));

    // Act
    await producer.send({ topic: rawTopic, messages });
    const all = await waitFor(
      () => events('raw'),
      (list) => list.slice(before).reduce((n, e) => n + offsetsOf(e).length, 0) >= 20,
      '20 records delivered',
    );

    // Assess
    const delivered = all.slice(before);
    for (const event of delivered) expect(offsetsOf(event).length).toBeLessThanOrEqual(3); // batchSize: 3, all partitions of the event
    for (const partition of [0, 1]) {
      const offsets = delivered.flatMap((e) => (e.records[`${rawTopic}-${partition}`] ?? []).map((r) => r.offset));
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b)); // in offset order
      expect(new Set(offsets).size).toBe(10);
    }
    expect(Number(await redis.get(keys.maxInFlight('raw')))).toBe(1);
  });

  it('commits only after a successful invocation and sends the whole failed batch again until it succeeds', async () => {
    // Prepare: the handler fails every batch holding `fail` while the flag is set.
    await redis.set(keys.failing('raw'), '1', 'EX', 600);
    const before = (await events('raw')).length;
    const [sent] = await producer.send({ topic: rawTopic, messages: [{ partition: 1, value: 'ok-before' }, { partition: 1, value: 'fail' }, { partition: 1, value: 'ok-after' }] });
    const first = Number(sent!.baseOffset);
    const esmGroup = `${rawTopic}-esm`;

    // Act: let it fail a few times.
    const failing = await waitFor(
      () => events('raw'),
      (list) => list.slice(before).filter((e) => offsetsOf(e).includes(first + 1)).length >= 3,
      'three deliveries of the failing batch',
    );

    // Assess: the same batch comes again whole, and nothing of it is committed yet.
    const attempts = failing.slice(before).filter((e) => offsetsOf(e).includes(first + 1));
    for (const attempt of attempts) expect(offsetsOf(attempt)).toEqual(offsetsOf(attempts[0]!));
    expect((await committed(esmGroup, rawTopic)).get(1)).toBeLessThanOrEqual(offsetsOf(attempts[0]!)[0]!);

    // Act: the downstream system recovers.
    await redis.del(keys.failing('raw'));

    // Assess: committed after the last record once the batch succeeded.
    await waitFor(() => committed(esmGroup, rawTopic), (offsets) => offsets.get(1) === first + 3, 'the commit after success');
  });

  it('honours a partial batch response in provisioned mode: records below the failed one are committed, the rest sent again', async () => {
    // Prepare
    const [sent] = await producer.send({ topic: partialTopic, messages: ['a', 'b', 'partial', 'c'].map((value) => ({ value })) });
    const base = Number(sent!.baseOffset);

    // Act
    const list = await waitFor(
      () => events('partial'),
      (all) => all.filter((e) => offsetsOf(e)[0] === base + 2).length >= 1,
      'the redelivery from the reported record',
    );

    // Assess
    expect(offsetsOf(list[0]!)).toEqual([base, base + 1, base + 2, base + 3]);
    const again = list.find((e) => offsetsOf(e)[0] === base + 2)!;
    expect(offsetsOf(again)).toEqual([base + 2, base + 3]);
    await waitFor(() => committed(`${partialTopic}-esm`, partialTopic), (offsets) => offsets.get(0) === base + 4, 'the commit of the whole batch');
  });

  it('runs a kafka-lanes handler: per-key order, poison dead-lettered, completion group committed to the end offsets', async () => {
    // Prepare: 5 keys x 12 records; one poison record.
    const messages = [];
    for (let seq = 1; seq <= 12; seq += 1) {
      for (const key of ['k0', 'k1', 'k2', 'k3', 'k4']) {
        messages.push({ key, value: JSON.stringify({ key, seq, ...(key === 'k2' && seq === 5 ? { poison: true } : {}) }) });
      }
    }

    // Act
    await producer.send({ topic: orderedTopic, messages });
    const seqs = await waitFor(
      async () => Promise.all(['k0', 'k1', 'k2', 'k3', 'k4'].map(async (key) => (await redis.lrange(keys.seqs(key), 0, -1)).map(Number))),
      (lists) => lists.reduce((n, l) => n + l.length, 0) >= 59,
      '59 records processed',
    );

    // Assess
    const all = Array.from({ length: 12 }, (_, i) => i + 1);
    expect(seqs).toEqual([all, all, all.filter((s) => s !== 5), all, all]);
    const ends = await admin.fetchTopicOffsets(orderedTopic);
    await waitFor(
      () => committed(completionGroupId(group), orderedTopic),
      (offsets) => ends.every(({ partition, high }) => offsets.get(partition) === Number(high)),
      'the completion group at the end offsets',
    );
    const dead = await admin.fetchTopicOffsets(deadLetterTopic(group));
    expect(dead.reduce((n, p) => n + Number(p.high), 0)).toBe(1);
    // The committer ran (it committed the completion group) without a line: no run summary, no metric line of its own.
    const log = readFileSync(logFile, 'utf8');
    expect(log).not.toContain('"message":"committer run"');
    expect(log).not.toContain('"LaneHeadsRedriven"');
    // Nor serverless-offline's line of each committer run.
    expect(log).not.toMatch(/\(λ: \w+Committer\) RequestId/);
  });

  it('sends failures through the retry tiers to success or, attempts exhausted, to the dead-letter topic, in per-key order', async () => {
    // Prepare: k5 and k6 fail once at seq 3 (then succeed on a retry tier); k7 fails at seq 2 every time
    // (maxAttempts 3: dead-lettered, and the lane goes on).
    const keysOf = ['k5', 'k6', 'k7', 'k8'];
    const messages = [];
    for (let seq = 1; seq <= 8; seq += 1) {
      for (const key of keysOf) {
        const failTimes = (key === 'k5' || key === 'k6') && seq === 3 ? 1 : key === 'k7' && seq === 2 ? 99 : 0;
        messages.push({ key, value: JSON.stringify({ key, seq, failTimes }) });
      }
    }
    const deadBefore = (await admin.fetchTopicOffsets(deadLetterTopic(group))).reduce((n, p) => n + Number(p.high), 0);

    // Act
    await producer.send({ topic: orderedTopic, messages });
    const seqs = await waitFor(
      async () => Promise.all(keysOf.map(async (key) => (await redis.lrange(keys.seqs(key), 0, -1)).map(Number))),
      (lists) => lists.reduce((n, l) => n + l.length, 0) >= 31,
      '31 records processed',
    );

    // Assess
    const all = Array.from({ length: 8 }, (_, i) => i + 1);
    expect(seqs).toEqual([all, all, all.filter((s) => s !== 2), all]);
    await waitFor(
      async () => (await admin.fetchTopicOffsets(deadLetterTopic(group))).reduce((n, p) => n + Number(p.high), 0),
      (dead) => dead === deadBefore + 1,
      'one more dead letter',
    );
    // The failed attempts travelled as copies through the retry topics: 2 (k5, k6) + 2 (k7's second and third).
    const copies = await Promise.all([retryTopic(group, '1s'), retryTopic(group, '2s')].map((t) => admin.fetchTopicOffsets(t)));
    expect(copies.flat().reduce((n, p) => n + Number(p.high), 0)).toBeGreaterThanOrEqual(4);
    const ends = await admin.fetchTopicOffsets(orderedTopic);
    await waitFor(
      () => committed(completionGroupId(group), orderedTopic),
      (offsets) => ends.every(({ partition, high }) => offsets.get(partition) === Number(high)),
      'the completion group at the end offsets',
    );
    // The failures are logged under the service's name, which the plugin gives the function (not `kafka-lanes`).
    const failed = readFileSync(logFile, 'utf8').split('\n').filter((line) => line.includes('"message":"record failed"'));
    expect(failed.length).toBeGreaterThan(0);
    for (const line of failed) expect(line).toContain('"service":"kl-offline-test"');
  }, 300_000);
});
