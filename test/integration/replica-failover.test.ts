import { CompletionStore } from '../../src/completion/store';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { MemberlessOffsetCommitter, runCommitter } from '../../src/committer';
import { parkKey, partitionKeys } from '../../src/completion';
import { connectRedis } from '../../src/connections';
import { createTelemetry } from '../../src/telemetry';
import { HandOffWriter } from '../../src/handoff';
import { LanesFunction, type LanesRecord } from '../../src/handler/lanes-function';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RedisPair, startRedis } from './support/redis-pair';
import { RetryFeed } from './support/retry-feed';
import { createKafka, createTopic, KAFKA_BROKERS, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TIERS = ['1s', '1m'];
const KEYS = ['A', 'B', 'A', 'C', 'A', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'A', 'C', 'B', 'C', 'B'];
const A_OFFSETS = KEYS.flatMap((key, offset) => (key === 'A' ? [offset] : []));

const cleanUps: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanUp of cleanUps.reverse()) await Promise.resolve(cleanUp()).catch(() => undefined);
});

/**
 * The history on a primary of our own: A's first record fails once, its six followers are parked. Then the
 * primary is killed right after the invocation returned and its replica promoted; the functions go on on the replica.
 */
async function failoverHistory(waitForReplicas: number, lagging: boolean): Promise<{ aRuns: number[]; parkedOnReplica: number }> {
  const pair = await RedisPair.start();
  cleanUps.push(() => pair.stop());
  const group = uniqueName('fgrp');
  const topic = uniqueName('fsrc');
  await createTopic(topic, 1);
  await Promise.all([...TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
  const options = resolveOptions({
    group, flushIntervalMs: 20, retry: { tiers: TIERS, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 300 } },
    redis: { waitForReplicas, waitTimeoutMs: 500 },
  } as LanesOptionsInput, {});
  const kafka = new Kafka({ clientId: 'failover-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
  const feed = await RetryFeed.start(TIERS.map((t) => `${group}.retry.${t}`));
  cleanUps.push(() => feed.stop(), () => writer.disconnect());
  let failedOnce = false;
  let failedOver = false;
  const aRuns: number[] = [];
  const processorOn = (redis: Redis, waits = true): LanesFunction => new LanesFunction({
    // The promoted replica has no replica of its own: the functions on it do not wait.
    options: waits ? options : { ...options, redis: { ...options.redis, waitForReplicas: 0 } }, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group),
    handler: (record: LanesRecord) => {
      if (String(record.key) === 'A' && failedOver) aRuns.push(record.origin.offset);
      if (record.origin.offset === 0 && !failedOnce) {
        failedOnce = true;
        throw new Error('A fails once');
      }
    },
  });

  const primary = new Redis({ port: pair.primary.port, maxRetriesPerRequest: 1 });
  cleanUps.push(() => primary.disconnect());
  if (lagging) await pair.cutReplication();
  await produce(topic, KEYS.map((key) => ({ key, value: '{}' })));
  const response = await processorOn(primary).process(eventOf(await fetchRecords(topic, KEYS.length)), contextWithin(60_000));
  expect(response.batchItemFailures).toEqual([]);

  await pair.failOver();
  failedOver = true;
  const replica = new Redis({ port: pair.replica.port, maxRetriesPerRequest: 1 });
  cleanUps.push(() => replica.disconnect());
  const ref = { group, topic, partition: 0 };
  const parkedOnReplica = await replica.llen(parkKey(ref, Buffer.from('A').toString('base64')));
  const onReplica = processorOn(replica, false);
  const commit = (): ReturnType<typeof runCommitter> => runCommitter({
    store: onReplica.store, group, committer: new MemberlessOffsetCommitter(createKafka(), group),
    redrive: { store: onReplica.store, options, sink: writer },
    recovery: { parts: { store: new CompletionStore(replica), kafka, options, sink: writer } },
  });
  // The retry copy comes (one delivery: on a replica without the invocation's writes it finds the loss and reports it),
  // then a committer run, then the rest, until every record of A ran after the failover. One delivery, not "until
  // nothing is pending": a copy kept for the recovery comes back 5 s on, and a feed that waited for an empty queue
  // went round with it until it lost a race with the consumer (seconds to minutes, or the feed's timeout).
  let delivered = 0;
  await feed.feedUntil((event, context) => {
    delivered += 1;
    return onReplica.process(event, context);
  }, () => delivered > 0);
  await commit();
  await feed.feedUntil(
    (event, context) => onReplica.process(event, context),
    async () => A_OFFSETS.every((o) => aRuns.includes(o)) && (await replica.hlen(partitionKeys(ref).lanes)) === 0,
  );
  return { aRuns, parkedOnReplica };
}

describe('a Redis failover right after an invocation returned (a primary and a replica of our own)', () => {
  it('with redis.waitForReplicas 1, the promoted replica holds every hand-off: A\'s records run in order, none lost', async () => {
    const { aRuns, parkedOnReplica } = await failoverHistory(1, false);
    expect(parkedOnReplica).toBe(6);
    expect(aRuns).toEqual(A_OFFSETS);
  });

  it('without WAIT, a replica that had not received the invocation\'s writes: the loss is found, nothing is lost', async () => {
    const { aRuns, parkedOnReplica } = await failoverHistory(0, true);
    expect(parkedOnReplica).toBe(0);
    expect(new Set(aRuns)).toEqual(new Set(A_OFFSETS));
    expect(aRuns).toEqual([...aRuns].sort((x, y) => x - y));
  });

  it('with redis.waitForReplicas 1 and no replica taking the writes, the invocation fails so the batch comes again', async () => {
    const pair = await RedisPair.start();
    cleanUps.push(() => pair.stop());
    await pair.cutReplication();
    const group = uniqueName('fgrp');
    const topic = uniqueName('fsrc');
    await createTopic(topic, 1);
    const options = resolveOptions({ group, redis: { waitForReplicas: 1, waitTimeoutMs: 200 } } as LanesOptionsInput, {});
    const primary = new Redis({ port: pair.primary.port, maxRetriesPerRequest: 1 });
    cleanUps.push(() => primary.disconnect());
    const processor = new LanesFunction({
      options, store: new CompletionStore(primary, options.caps), handOff: () => new HandOffWriter(createKafka(), { deadLetterTopic: `${group}.dlq` }), telemetry: createTelemetry(group),
      handler: () => undefined,
    });
    await produce(topic, [{ key: 'A', value: '{}' }]);
    await expect(processor.process(eventOf(await fetchRecords(topic, 1)), contextWithin(60_000))).rejects.toThrow(/0 of 1 Redis replica\(s\) acknowledged/);
  });
});

describe('the start-up check of the eviction policy', () => {
  it('refuses a Redis whose maxmemory-policy evicts keys, naming the policy', async () => {
    const server = await startRedis(['--maxmemory-policy', 'allkeys-lru']);
    cleanUps.push(() => void server.process.kill('SIGKILL'));
    const options = resolveOptions({ group: uniqueName('egrp'), redis: { url: `redis://127.0.0.1:${server.port}` } }, {});
    await expect(connectRedis(options, createTelemetry(options.group))).rejects.toThrow('got `allkeys-lru`');
  });

  it('lets noeviction through', async () => {
    const server = await startRedis(['--maxmemory-policy', 'noeviction']);
    cleanUps.push(() => void server.process.kill('SIGKILL'));
    const options = resolveOptions({ group: uniqueName('egrp'), redis: { url: `redis://127.0.0.1:${server.port}` } }, {});
    const redis = await connectRedis(options, createTelemetry(options.group));
    redis.disconnect();
  });
});
