import { CompletionStore } from '../../src/completion/store';
import { spawnWorker } from './support/worker-process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { parkKey, partitionKeys } from '../../src/completion';
import type { PartitionRef } from '../../src/ports/partition';
import { HandOffWriter, readHandOffHeaders } from '../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { LanesFunction, type LanesRecord, type RecordHandler } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { redriveExpiredLeases } from '../../src/recovery/redrive';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { ownHeaders, previousReleaseHeaders } from './support/previous-release';
import { RetryFeed } from './support/retry-feed';
import { createTopic, KAFKA_BROKERS, redisSetups, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TIERS = ['1s', '1m'];

interface Run {
  key: string;
  offset: number;
  attempt: number;
  at: number;
  dueAt: number | undefined;
}

interface Setup {
  options: ReturnType<typeof resolveOptions>;
  group: string;
  topic: string;
  ref: PartitionRef;
  processor: LanesFunction;
  redis: Redis | Cluster;
  writer: HandOffWriter;
  feed: RetryFeed;
  runs: Run[];
}

const open: Setup[] = [];

afterAll(async () => {
  await Promise.all(open.map(async (s) => {
    await s.feed.stop().catch(() => undefined);
    await s.writer.disconnect().catch(() => undefined);
    s.redis.disconnect();
  }));
});

async function setUp(
  connect: () => Redis | Cluster,
  input: Partial<LanesOptionsInput>,
  handler: (record: LanesRecord, attempt: number) => unknown,
): Promise<Setup> {
  const group = uniqueName('rgrp');
  const topic = uniqueName('rsrc');
  await createTopic(topic, 1);
  await Promise.all([...TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
  const options = resolveOptions({
    group, flushIntervalMs: 20, retry: { tiers: TIERS, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 300 } }, ...input,
  } as LanesOptionsInput, {});
  const redis = connect();
  const writer = new HandOffWriter(new Kafka({ clientId: 'retry-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${group}.dlq` });
  const runs: Run[] = [];
  const wrapped: RecordHandler = (record, ctx) => {
    runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt, at: Date.now(), dueAt: readHandOffHeaders(record.headers).dueAtMs });
    return handler(record, ctx.attempt);
  };
  const processor = new LanesFunction({ options, handler: wrapped, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group) });
  const feed = await RetryFeed.start(TIERS.map((t) => `${group}.retry.${t}`));
  const setup = { options, group, topic, ref: { group, topic, partition: 0 }, processor, redis, writer, feed, runs };
  open.push(setup);
  return setup;
}

const feedTo = (s: Setup) => (event: unknown, context: ReturnType<typeof contextWithin>) => s.processor.process(event, context);

async function lanesFree(s: Setup): Promise<boolean> {
  return (await s.redis.hlen(partitionKeys(s.ref).lanes)) === 0;
}

describe.each(redisSetups())('retry function on a real broker and Redis $name', ({ name, connect }) => {
  it('runs a head failing twice then its four successors from later batches in order; other keys never wait', async () => {
    // Prepare: A's first record fails on attempts 1 and 2.
    const s = await setUp(connect, {}, (record, attempt) => {
      if (String(record.key) === 'A' && record.origin.offset === 0 && attempt < 3) throw new Error(`flaky ${attempt}`);
    });
    await produce(s.topic, [
      { key: 'A', value: '{}' }, { key: 'B', value: '{}' },
      { key: 'A', value: '{}' }, { key: 'C', value: '{}' }, { key: 'A', value: '{}' },
      { key: 'A', value: '{}' }, { key: 'B', value: '{}' }, { key: 'A', value: '{}' },
    ]);
    const records = await fetchRecords(s.topic, 8);

    // Act: three batches, then the retry copies as they come.
    for (const batch of [records.slice(0, 2), records.slice(2, 5), records.slice(5)]) {
      expect((await s.processor.process(eventOf(batch), contextWithin(60_000))).batchItemFailures).toEqual([]);
    }
    const othersBeforeRetry = s.runs.filter((r) => r.key !== 'A').length;
    await s.feed.feedUntil(feedTo(s), async () => (await lanesFree(s)) && s.runs.filter((r) => r.key === 'A').length === 7);

    // Assess
    expect(othersBeforeRetry).toBe(3);
    expect(s.runs.filter((r) => r.key === 'A').map((r) => [r.offset, r.attempt])).toEqual([
      [0, 1], [0, 2], [0, 3], [2, 1], [4, 1], [5, 1], [7, 1],
    ]);
    // Never early (G4): every run of a retry copy started at or after its due time.
    for (const run of s.runs.filter((r) => r.dueAt !== undefined)) expect(run.at).toBeGreaterThanOrEqual(run.dueAt!);
    expect((await s.processor.store.frontier(s.ref))?.frontier).toBe(8);
  });

  it('a successor that fails becomes the head; a retry of a retry never overtakes it', async () => {
    const s = await setUp(connect, {}, (record, attempt) => {
      if (record.origin.offset <= 1 && attempt === 1) throw new Error('first attempt fails');
    });
    await produce(s.topic, [{ key: 'A', value: '{}' }, { key: 'A', value: '{}' }, { key: 'A', value: '{}' }]);
    await s.processor.process(eventOf(await fetchRecords(s.topic, 3)), contextWithin(60_000));

    await s.feed.feedUntil(feedTo(s), async () => (await lanesFree(s)) && s.runs.length === 5);

    expect(s.runs.map((r) => [r.offset, r.attempt])).toEqual([[0, 1], [0, 2], [1, 1], [1, 2], [2, 1]]);
  });

  it.each(['release', 'hold'] as const)('dead-letters a head whose attempts run out, then %ss its lane', async (policy) => {
    const s = await setUp(connect, { deadLetter: { policy }, retry: { tiers: TIERS, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 100 } } }, (record) => {
      if (record.origin.offset === 0) throw new Error('always');
    });
    await produce(s.topic, [{ key: 'A', value: '{}' }, { key: 'A', value: '{}' }]);
    await s.processor.process(eventOf(await fetchRecords(s.topic, 2)), contextWithin(60_000));

    const headState = async (): Promise<string | null> => s.redis.hget(partitionKeys(s.ref).lanes, Buffer.from('A').toString('base64'));
    await s.feed.feedUntil(feedTo(s), async () => (policy === 'release' ? s.runs.some((r) => r.offset === 1) && (await lanesFree(s)) : /\|held\|/.test((await headState()) ?? '')));

    const dead = await fetchRecords(`${s.group}.dlq`, 1);
    expect(readHandOffHeaders(dead[0]!.headers ?? [])).toMatchObject({ originOffset: 0, attempt: 2, reason: 'attempts-exhausted' });
    if (policy === 'hold') expect(s.runs.filter((r) => r.offset === 1)).toEqual([]);
  });

  it('runs the same retry copy once when it is delivered twice, and a stale attempt does nothing', async () => {
    let failed = false;
    const s = await setUp(connect, {}, () => {
      if (!failed) {
        failed = true;
        throw new Error('once');
      }
    });
    await produce(s.topic, [{ key: 'A', value: '{}' }]);
    await s.processor.process(eventOf(await fetchRecords(s.topic, 1)), contextWithin(60_000));
    const [copy] = await fetchRecords(`${s.group}.retry.1s`, 1);
    s.feed.take();
    // The copy written twice (a crash after the write), and delivered twice at one offset (a redelivery).
    await produce(`${s.group}.retry.1s`, [{ key: 'A', value: '{}', headers: Object.fromEntries((copy!.headers ?? []).map((h) => [h.name, Buffer.from(h.value)])) }]);
    const copies = await fetchRecords(`${s.group}.retry.1s`, 2);

    await s.processor.process(eventOf(copies), contextWithin(60_000));
    await s.processor.process(eventOf(copies.slice(0, 1)), contextWithin(60_000));

    expect(s.runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(await lanesFree(s)).toBe(true);
    const retryRef = { group: s.group, topic: `${s.group}.retry.1s`, partition: 0 };
    expect((await s.processor.store.frontier(retryRef))?.frontier).toBe(2);
  });

  it('runs a retry copy the previous release wrote (one header per fact) as its own: a fleet mid-upgrade', async () => {
    // Prepare: A's head fails once; its copy is taken off the feed and written again as the previous release wrote it.
    const s = await setUp(connect, {}, (record, attempt) => {
      if (record.origin.offset === 0 && attempt === 1) throw new Error('down');
    });
    await produce(s.topic, [{ key: 'A', value: '{"n":0}', headers: { trace: 't0' } }, { key: 'A', value: '{"n":1}' }, { key: 'A', value: '{"n":2}' }]);
    await s.processor.process(eventOf(await fetchRecords(s.topic, 3)), contextWithin(60_000));
    await s.feed.feedUntil(async () => ({ batchItemFailures: [] }), () => s.feed.pending > 0);
    const [copy] = s.feed.take();
    const facts = readHandOffHeaders(copy!.headers ?? []);
    await produce(copy!.topic, [{ key: 'A', value: '{"n":0}', headers: { ...ownHeaders(copy!), ...previousReleaseHeaders(facts) } }]);

    // Act: the retry function gets only the copy in the previous release's form.
    await s.feed.feedUntil(feedTo(s), async () => (await lanesFree(s)) && s.runs.length === 4);

    // Assess: the copy as this release wrote it, then as the previous one did; the head ran as attempt 2 from its origin,
    // then its parked successors in order, and the source partition is done.
    const frameworkNames = (r: (typeof s.feed.seen)[number]): string[] => [...new Set((r.headers ?? []).map((h) => h.name))].filter((n) => n.startsWith('lanes-'));
    expect(s.feed.seen.filter((r) => r.topic === copy!.topic).slice(0, 2).map(frameworkNames)).toEqual([
      ['lanes-copy'],
      ['lanes-origin-topic', 'lanes-origin-partition', 'lanes-origin-offset', 'lanes-origin-timestamp', 'lanes-lane', 'lanes-kind', 'lanes-attempt', 'lanes-due-at', 'lanes-first-failure-at', 'lanes-error-class', 'lanes-error-message'],
    ]);
    expect(s.runs.map((r) => [r.offset, r.attempt])).toEqual([[0, 1], [0, 2], [1, 1], [2, 1]]);
    expect((await s.processor.store.frontier(s.ref))?.frontier).toBe(3);
  });

  it('dead-letters a malformed retry copy with the reason', async () => {
    const s = await setUp(connect, {}, () => undefined);
    await produce(`${s.group}.retry.1s`, [{ key: 'A', value: '{}', headers: { 'lanes-attempt': 'two' } }]);
    const copies = await fetchRecords(`${s.group}.retry.1s`, 1);

    const response = await s.processor.process(eventOf(copies), contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    const [dead] = await fetchRecords(`${s.group}.dlq`, 1);
    const facts = readHandOffHeaders(dead!.headers ?? []);
    expect(facts.reason).toBe('malformed');
    expect(facts.errorMessage).toMatch(/lanes-origin-topic/);
    expect(s.runs).toEqual([]);
  });

  it.each(['after-head-check', 'before-release', 'after-release', 'mid-drain', 'after-tier-write'])(
    'loses nothing and reorders nothing when the retry function is SIGKILLed %s, then redelivered and re-driven',
    async (step) => {
      // Prepare: lane A with three records; attempt 1 of records 0 and 1 fails (the worker's rule too).
      const fails = (offset: number, attempt: number): boolean => attempt === 1 && offset <= 1;
      const s = await setUp(connect, { deadlineMarginMs: 1_000 }, (record, attempt) => {
        if (fails(record.origin.offset, attempt)) throw new Error('first attempt fails');
      });
      await produce(s.topic, [{ key: 'A', value: '{}' }, { key: 'A', value: '{}' }, { key: 'A', value: '{}' }]);
      await s.processor.process(eventOf(await fetchRecords(s.topic, 3)), contextWithin(60_000));
      await s.feed.feedUntil(async () => ({ batchItemFailures: [] }), () => s.feed.pending > 0);
      const retryEvent = eventOf(s.feed.take());
      const dir = mkdtempSync(join(tmpdir(), 'kl-retry-crash-'));
      writeFileSync(join(dir, 'event.json'), JSON.stringify(retryEvent));

      // Act: the retry function dies at the step; the batch comes again; a committer run re-drives.
      const childRuns: Array<{ offset: number; attempt: number }> = [];
      const runsBefore = s.runs.length;
      const child = spawnWorker(join(__dirname, 'support', 'retry-crash-worker.ts'), [
        join(dir, 'event.json'),
        JSON.stringify({ group: s.group, flushIntervalMs: 20, deadlineMarginMs: 1_000, retry: { tiers: TIERS, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 300 } } }),
        name, step,
      ]);
      let reached = false;
      let buffered = '';
      await new Promise<void>((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', () => resolve());
        child.stdout!.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop()!;
          for (const line of lines) {
            const [word, a, b] = line.split(' ');
            if (word === 'start') childRuns.push({ offset: Number(a), attempt: Number(b) });
            if (word === 'at' && a === step) {
              reached = true;
              child.kill('SIGKILL');
            }
          }
        });
      });
      expect(reached).toBe(true);
      expect((await s.processor.process(retryEvent, contextWithin(60_000))).batchItemFailures).toEqual([]);
      // Far enough ahead that every lease the dead worker took has expired.
      await redriveExpiredLeases({ store: s.processor.store, options: s.options, sink: s.writer, now: () => Date.now() + 600_000 });
      await s.feed.feedUntil(feedTo(s), async () => (await lanesFree(s)) && s.runs.some((r) => r.offset === 2));

      // Assess: every record succeeded once at least, the lane ran in offset order, the lane is free.
      const all = [...s.runs.slice(0, runsBefore), ...childRuns, ...s.runs.slice(runsBefore)];
      const succeeded = new Set(all.filter((r) => !fails(r.offset, r.attempt)).map((r) => r.offset));
      expect([...succeeded].sort()).toEqual([0, 1, 2]);
      const order = all.map((r) => r.offset).filter((offset, i, list) => i === 0 || list[i - 1] !== offset);
      expect(order).toEqual([0, 1, 2]);
      expect(await lanesFree(s)).toBe(true);
      expect(await s.redis.llen(parkKey(s.ref, Buffer.from('A').toString('base64')))).toBe(0);
      expect((await s.processor.store.frontier(s.ref))?.frontier).toBe(3);
    },
  );
});
