import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { partitionKeys } from '../../src/completion';
import { NonRetriableError } from '../../src/errors';
import { HandOffWriter, readHandOffHeaders } from '../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { Processor } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/engine/telemetry';
import { runCliCaptured } from './support/cli';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RetryFeed } from './support/retry-feed';
import { createTopic, KAFKA_BROKERS, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TIERS = ['1s', '1m'];
const laneA = Buffer.from('A').toString('base64');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
});

/** A group whose lane A has a dead-lettered head (offset 0) and a parked successor (offset 1). */
async function deadLetteredHead(policy: 'release' | 'hold') {
  const group = uniqueName('ogrp');
  const topic = uniqueName('osrc');
  await createTopic(topic, 1);
  await Promise.all([...TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
  const options = resolveOptions({ group, flushIntervalMs: 20, deadLetter: { policy }, retry: { tiers: TIERS } } as LanesOptionsInput, {});
  const redis = new Redis(REDIS_URL);
  const writer = new HandOffWriter(new Kafka({ clientId: 'operator-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${group}.dlq` });
  let broken = true;
  const runs: Array<{ offset: number; attempt: number }> = [];
  const processor = new Processor({
    options, redis, handOff: () => writer, telemetry: createTelemetry(group),
    handler: (record, ctx) => {
      runs.push({ offset: record.origin.offset, attempt: ctx.attempt });
      if (broken && record.origin.offset === 0) throw new NonRetriableError('broken until fixed');
    },
  });
  const feed = await RetryFeed.start(TIERS.map((t) => `${group}.retry.${t}`));
  cleanups.push(async () => {
    await feed.stop();
    await writer.disconnect();
    redis.disconnect();
  });
  await produce(topic, [{ key: 'A', value: '{"n":0}', headers: { trace: 't0' } }, { key: 'A', value: '{"n":1}' }]);
  await processor.process(eventOf(await fetchRecords(topic, 2)), contextWithin(60_000));
  const fix = (): void => {
    broken = false;
  };
  const lanesFree = async (): Promise<boolean> => (await redis.hlen(partitionKeys({ group, topic, partition: 0 }).lanes)) === 0;
  return { group, topic, processor, redis, feed, runs, fix, lanesFree };
}

describe('operator commands on a real broker and Redis', () => {
  it('lane release skips a held head and resumes its lane in order', async () => {
    const s = await deadLetteredHead('hold');
    expect(s.runs.map((r) => r.offset)).toEqual([0]);

    const { code, out } = await runCliCaptured('lane', 'release', s.group, s.topic, '0', laneA, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.feed.feedUntil((event, context) => s.processor.process(event, context), () => s.runs.some((r) => r.offset === 1));

    expect(code).toBe(0);
    expect(out).toMatch(/held head offset 0 skipped/);
    expect(s.runs.map((r) => r.offset)).toEqual([0, 1]);
    expect(await s.lanesFree()).toBe(true);
  });

  it('lane release refuses a lane that is not held, changing nothing', async () => {
    const s = await deadLetteredHead('release');
    const { code, err } = await runCliCaptured('lane', 'release', s.group, s.topic, '0', laneA, '--redis-url', REDIS_URL);
    expect(code).toBe(1);
    expect(err).toMatch(/is not blocked/);
  });

  it('dlq replay resumes a held head in order as attempt 1', async () => {
    const s = await deadLetteredHead('hold');
    s.fix();

    const dry = await runCliCaptured('dlq', 'replay', s.group, '--dry-run', '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    expect(dry.out).toMatch(/resumed-held-head/);
    expect(dry.out).toMatch(/dry run: nothing changed/);
    expect(await s.redis.hget(partitionKeys({ group: s.group, topic: s.topic, partition: 0 }).lanes, laneA)).toMatch(/\|held\|/);

    const { code, out } = await runCliCaptured('dlq', 'replay', s.group, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.feed.feedUntil((event, context) => s.processor.process(event, context), async () => s.runs.some((r) => r.offset === 1) && (await s.lanesFree()));

    expect(code).toBe(0);
    expect(out).toMatch(/resumed-held-head/);
    expect(s.runs).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 1 }, { offset: 1, attempt: 1 }]);
  });

  it('dlq replay writes a released dead letter back to its origin topic with lanes-replay-of', async () => {
    const s = await deadLetteredHead('release');
    expect(s.runs.map((r) => r.offset)).toEqual([0, 1]);

    const dry = await runCliCaptured('dlq', 'replay', s.group, '--origin-topic', s.topic, '--dry-run', '--redis-url', REDIS_URL);
    expect(dry.out).toMatch(/written-back/);
    const { code } = await runCliCaptured('dlq', 'replay', s.group, '--origin-topic', s.topic, '--lane', laneA, '--since', new Date(Date.now() - 600_000).toISOString(), '--redis-url', REDIS_URL);

    expect(code).toBe(0);
    const all = await fetchRecords(s.topic, 3);
    const replayed = all[2]!;
    expect(replayed.value?.toString()).toBe('{"n":0}');
    const headers = new Map((replayed.headers ?? []).map((h) => [h.name, Buffer.from(h.value).toString()]));
    expect(headers.get('lanes-replay-of')).toBe(`${s.group}.dlq/0/0`);
    expect(headers.get('trace')).toBe('t0');
    expect(readHandOffHeaders(replayed.headers ?? []).kind).toBeUndefined();
  });
});
