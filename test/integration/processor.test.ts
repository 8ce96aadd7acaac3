import { CompletionStore } from '../../src/completion/store';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type Cluster } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { parkKey, partitionKeys } from '../../src/completion';
import type { PartitionRef } from '../../src/ports/partition';
import { NonRetriableError, RetryLaterError } from '../../src/errors';
import { HandOffWriter, readHandOffHeaders } from '../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { BatchNotHandedOffError, LanesFunction, type LanesRecord, type RecordHandler } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { contextWithin, eventOf, fetchRecords, produce, type TestMessage } from './support/kafka-events';
import { createTopic, KAFKA_BROKERS, redisSetups, uniqueName } from './support/stack';
import { spawnWorker } from './support/worker-process';

jest.setTimeout(180_000);
// Failures are what many of these tests provoke: keep their log lines out of the test output.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

let connectRedis: () => Redis | Cluster = () => {
  throw new Error('no Redis setup selected');
};

/** The lane id of a Kafka key, as the processor derives it in key mode. */
const laneOf = (key: string): string => Buffer.from(key).toString('base64');

/** Puts an environment variable back (assigning `undefined` would store the string "undefined"). */
function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A recorder of handler runs: who started when, and how many ran at once. */
class Recorder {
  readonly starts: Array<{ key: string; offset: number; partition: number }> = [];
  readonly running = new Map<string, number>();
  inFlight = 0;
  maxInFlight = 0;
  overlaps = 0;

  wrap(work: (record: LanesRecord) => Promise<void>): RecordHandler {
    return async (record) => {
      const key = `${record.partition}/${String(record.key)}`;
      this.starts.push({ key, offset: record.offset, partition: record.partition });
      this.running.set(key, (this.running.get(key) ?? 0) + 1);
      if (this.running.get(key)! > 1) this.overlaps += 1;
      this.inFlight += 1;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      try {
        await work(record);
      } finally {
        this.inFlight -= 1;
        this.running.set(key, this.running.get(key)! - 1);
      }
    };
  }

  /** Per key, offsets in start order. */
  startOrderByKey(): Map<string, number[]> {
    const byKey = new Map<string, number[]>();
    for (const s of this.starts) byKey.set(s.key, [...(byKey.get(s.key) ?? []), s.offset]);
    return byKey;
  }
}

interface Setup {
  group: string;
  topic: string;
  processor: LanesFunction;
  redis: Redis | Cluster;
  writer: HandOffWriter;
}

const open: Setup[] = [];

async function setUp(
  input: Partial<LanesOptionsInput>,
  handler: RecordHandler,
  { partitions = 1, brokers = KAFKA_BROKERS, redis: given }: { partitions?: number; brokers?: string[]; redis?: Redis | Cluster } = {},
): Promise<Setup> {
  const group = uniqueName('grp');
  const topic = uniqueName('src');
  await createTopic(topic, partitions);
  const options = resolveOptions({ group, retry: { tiers: ['1s', '1m'] }, ...input } as LanesOptionsInput, {});
  await Promise.all([`${group}.retry.1s`, `${group}.retry.1m`, `${group}.dlq`].map((t) => createTopic(t, partitions)));
  const redis = given ?? connectRedis();
  const kafka = new Kafka({ clientId: 'processor-test', brokers, logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 100 }, connectionTimeout: 500 });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: `${group}.dlq` });
  const processor = new LanesFunction({ options, handler, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group) });
  const setup = { group, topic, processor, redis, writer };
  open.push(setup);
  return setup;
}

afterAll(async () => {
  await Promise.all(open.map(async (s) => {
    await s.writer.disconnect().catch(() => undefined);
    s.redis.disconnect();
  }));
});

function messages(count: number, keys: number, partitions = 1): TestMessage[] {
  return Array.from({ length: count }, (_, i) => ({ key: `k${i % keys}`, value: JSON.stringify({ i }), partition: i % partitions }));
}

async function readTopic(topic: string, count: number): Promise<Awaited<ReturnType<typeof fetchRecords>>> {
  return count === 0 ? [] : fetchRecords(topic, count);
}

/** The offsets whose done bit is set, read straight from the bitmap. */
async function doneOffsets(redis: Redis | Cluster, ref: PartitionRef, offsets: number[]): Promise<Set<number>> {
  const keys = partitionKeys(ref);
  const base = Number(await redis.hget(keys.meta, 'base'));
  const done = new Set<number>();
  for (const offset of offsets) {
    if (offset < base || (await redis.getbit(keys.bits, offset - base)) === 1) done.add(offset);
  }
  return done;
}

async function frontierOf(setup: Setup, partition = 0): Promise<{ frontier: number; highest: number } | undefined> {
  return setup.processor.store.frontier({ group: setup.group, topic: setup.topic, partition });
}

describe.each(redisSetups())('processor on a real broker and Redis $name', ({ name, connect }) => {
  beforeAll(() => {
    connectRedis = connect;
  });

  it('keeps per-key order under concurrency: 5,000 records over 200 keys', async () => {
    // Prepare
    const recorder = new Recorder();
    const setup = await setUp({ concurrency: 200 }, recorder.wrap(async () => sleep(Math.random() * 8)), { partitions: 2 });
    await produce(setup.topic, messages(5000, 200, 2));
    const records = await fetchRecords(setup.topic, 5000);

    // Act
    const response = await setup.processor.process(eventOf(records), contextWithin(120_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(recorder.starts).toHaveLength(5000);
    expect(recorder.overlaps).toBe(0);
    for (const offsets of recorder.startOrderByKey().values()) expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(recorder.maxInFlight).toBeGreaterThan(50);
    for (const partition of [0, 1]) {
      const f = await frontierOf(setup, partition);
      expect(f?.frontier).toBe(f!.highest + 1);
    }
  });

  it('runs one record at a time per partition in partition mode, in offset order', async () => {
    const recorder = new Recorder();
    const perPartition = new Map<number, number>();
    let maxPerPartition = 0;
    const setup = await setUp({ ordering: 'partition', concurrency: 50 }, recorder.wrap(async (record) => {
      perPartition.set(record.partition, (perPartition.get(record.partition) ?? 0) + 1);
      maxPerPartition = Math.max(maxPerPartition, perPartition.get(record.partition)!);
      await sleep(1);
      perPartition.set(record.partition, perPartition.get(record.partition)! - 1);
    }), { partitions: 3 });
    await produce(setup.topic, messages(300, 30, 3));
    const records = await fetchRecords(setup.topic, 300);

    await setup.processor.process(eventOf(records), contextWithin(120_000));

    expect(maxPerPartition).toBe(1);
    expect(recorder.maxInFlight).toBeGreaterThan(1);
    for (const partition of [0, 1, 2]) {
      const offsets = recorder.starts.filter((s) => s.partition === partition).map((s) => s.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      expect(offsets).toHaveLength(100);
    }
  });

  it('runs records of one key at once in unordered mode', async () => {
    const recorder = new Recorder();
    const setup = await setUp({ ordering: 'unordered', concurrency: 100 }, recorder.wrap(async () => sleep(20)));
    await produce(setup.topic, messages(400, 1));
    const records = await fetchRecords(setup.topic, 400);

    await setup.processor.process(eventOf(records), contextWithin(120_000));

    expect(recorder.starts).toHaveLength(400);
    expect(recorder.maxInFlight).toBeGreaterThan(50);
    expect(recorder.overlaps).toBeGreaterThan(0);
  });

  it('does not block other keys behind a key that always fails (G6), and parks the failing lane', async () => {
    const ran = new Map<string, number>();
    const setup = await setUp({ concurrency: 50 }, async (record) => {
      const key = String(record.key);
      ran.set(key, (ran.get(key) ?? 0) + 1);
      await sleep(2);
      if (key === 'k0') throw new Error('downstream of k0 is broken');
    });
    await produce(setup.topic, messages(1000, 20));
    const records = await fetchRecords(setup.topic, 1000);

    const response = await setup.processor.process(eventOf(records), contextWithin(120_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(ran.get('k0')).toBe(1);
    for (let k = 1; k < 20; k += 1) expect(ran.get(`k${k}`)).toBe(50);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    expect(await setup.redis.llen(parkKey(ref, Buffer.from('k0').toString('base64')))).toBe(49);
    const retried = await readTopic(`${setup.group}.retry.1s`, 1);
    expect(retried[0]?.key?.toString()).toBe('k0');
    const headers = readHandOffHeaders(retried[0]!.headers!);
    expect(headers).toMatchObject({ originTopic: setup.topic, originPartition: 0, originOffset: records[0]!.offset, attempt: 2 });
    expect((await frontierOf(setup))?.frontier).toBe(records[999]!.offset + 1);
  });

  it('does not run again what was flushed before its process was killed, and loses nothing (G7)', async () => {
    // Prepare: a processor in a child process, killed half way through a batch of 600 records.
    let runs: number[] = [];
    const setup = await setUp({ concurrency: 20, flushIntervalMs: 20 }, async (record) => {
      runs.push(record.offset);
    });
    await produce(setup.topic, messages(600, 60));
    const records = await fetchRecords(setup.topic, 600);
    const event = eventOf(records);
    const dir = mkdtempSync(join(tmpdir(), 'kl-crash-'));
    writeFileSync(join(dir, 'event.json'), JSON.stringify(event));
    const child = spawnWorker(join(__dirname, 'support', 'crash-worker.ts'), [
      join(dir, 'event.json'),
      JSON.stringify({ group: setup.group, concurrency: 20, flushIntervalMs: 20, retry: { tiers: ['1s', '1m'] } }),
      name,
    ]);
    const ranInChild: number[] = [];
    let buffered = '';
    await new Promise<void>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', () => resolve());
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) if (line.startsWith('ran ')) ranInChild.push(Number(line.slice(4)));
        if (ranInChild.length >= 300 && child.exitCode === null) child.kill('SIGKILL');
      });
    });
    expect(ranInChild.length).toBeGreaterThanOrEqual(300);
    expect(ranInChild.length).toBeLessThan(600);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    const doneBefore = await doneOffsets(setup.redis, ref, records.map((r) => r.offset));
    expect(doneBefore.size).toBeGreaterThan(0);
    runs = [];

    // Act: the event source delivers the same batch again.
    const response = await setup.processor.process(event, contextWithin(120_000));

    // Assess: flushed records did not run again; every other record ran; nothing is lost.
    expect(response.batchItemFailures).toEqual([]);
    expect(runs.filter((offset) => doneBefore.has(offset))).toEqual([]);
    expect(new Set([...doneBefore, ...runs]).size).toBe(600);
    expect((await frontierOf(setup))?.frontier).toBe(records[599]!.offset + 1);
  });

  it('hands unstarted records off near the deadline and returns in time, losing none', async () => {
    const started: number[] = [];
    const setup = await setUp({ concurrency: 4, deadlineMarginMs: 1000 }, async (record) => {
      started.push(record.offset);
      await sleep(50);
    });
    await produce(setup.topic, messages(300, 30));
    const records = await fetchRecords(setup.topic, 300);
    const context = contextWithin(2500);

    const response = await setup.processor.process(eventOf(records), context);

    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
    expect(response.batchItemFailures).toEqual([]);
    expect(started.length).toBeLessThan(300);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    const lanes = await setup.redis.hgetall(partitionKeys(ref).lanes);
    const parked = await Promise.all(Object.keys(lanes).map((lane) => setup.redis.llen(parkKey(ref, lane))));
    const retried = await readTopic(`${setup.group}.retry.1s`, Object.keys(lanes).length);
    // Every record is accounted for: run, parked behind a deferred head, or the deferred head itself.
    expect(started.length + parked.reduce((a, b) => a + b, 0) + retried.length).toBe(300);
    expect(retried.every((r) => readHandOffHeaders(r.headers!).deferred === true)).toBe(true);
    expect((await frontierOf(setup))?.frontier).toBe(records[299]!.offset + 1);
  });

  it('dead-letters malformed records and undeserializable values with the reason, and runs the rest', async () => {
    const values: unknown[] = [];
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      values.push(record.value);
    });
    await produce(setup.topic, [
      { key: 'a', value: '{"ok":1}' },
      { key: 'a', value: 'not json' },
      { key: 'a', value: '{"ok":3}' },
      { key: 'b', value: '{"ok":4}' },
    ]);
    const records = await fetchRecords(setup.topic, 4);
    const event = eventOf(records);
    // A record AWS could never send: its value is not base64.
    const batch = Object.values(event.records)[0]!;
    batch.push({ ...batch[3]!, offset: batch[3]!.offset + 1, value: '@@not base64@@' });
    // And one whose offset cannot be read at all: it is dead-lettered without an origin offset.
    batch.push({ ...batch[3]!, offset: 'seven' as unknown as number });

    const response = await setup.processor.process(event, contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(values).toEqual(expect.arrayContaining([{ ok: 1 }, { ok: 3 }, { ok: 4 }]));
    expect(values).toHaveLength(3);
    const dead = await readTopic(`${setup.group}.dlq`, 3);
    const headers = dead.map((r) => readHandOffHeaders(r.headers!));
    expect(headers.map((h) => h.reason).sort()).toEqual(['deserialization', 'malformed', 'malformed']);
    expect(headers.filter((h) => h.reason === 'malformed').map((h) => h.originOffset ?? 'unknown').sort()).toEqual([records[3]!.offset + 1, 'unknown']);
    expect((await frontierOf(setup))?.frontier).toBe(records[3]!.offset + 2);
  });

  it('dead-letters a NonRetriableError at once and lets its lane go on (release)', async () => {
    const seen: number[] = [];
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      seen.push(record.offset);
      if ((record.value as { i: number }).i === 0) throw new NonRetriableError('bad order');
    });
    await produce(setup.topic, messages(5, 1));
    const records = await fetchRecords(setup.topic, 5);

    await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(seen).toEqual(records.map((r) => r.offset));
    const dead = await readTopic(`${setup.group}.dlq`, 1);
    expect(readHandOffHeaders(dead[0]!.headers!)).toMatchObject({ reason: 'non-retriable', errorMessage: 'bad order' });
  });

  it('holds a lane after a dead letter under the hold policy, and dead-letters when attempts are exhausted', async () => {
    const seen: string[] = [];
    const setup = await setUp({ concurrency: 10, retry: { maxAttempts: 1, tiers: ['1s', '1m'] }, deadLetter: { policy: 'hold' } }, async (record) => {
      seen.push(`${String(record.key)}@${record.offset}`);
      if (String(record.key) === 'k0') throw new Error('always');
    });
    await produce(setup.topic, messages(6, 2));
    const records = await fetchRecords(setup.topic, 6);

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(seen.filter((s) => s.startsWith('k0'))).toEqual([`k0@${records[0]!.offset}`]);
    expect(seen.filter((s) => s.startsWith('k1'))).toHaveLength(3);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    const lane = Buffer.from('k0').toString('base64');
    expect(await setup.redis.hget(partitionKeys(ref).lanes, lane)).toMatch(new RegExp(`^${records[0]!.offset}\\|1\\|held\\|`));
    expect(await setup.redis.llen(parkKey(ref, lane))).toBe(2);
    const dead = await readTopic(`${setup.group}.dlq`, 1);
    expect(readHandOffHeaders(dead[0]!.headers!)).toMatchObject({ reason: 'attempts-exhausted', attempt: 1, originOffset: records[0]!.offset });
  });

  it('hands a redelivered lane head off again when its earlier hand-off never completed, parking its followers', async () => {
    const ran: number[] = [];
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      ran.push(record.offset);
    });
    await produce(setup.topic, messages(6, 2));
    const records = await fetchRecords(setup.topic, 6);
    // An earlier invocation blocked lane k0 on offset 0 (attempt 3), then died before writing the retry copy.
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    const lane = Buffer.from('k0').toString('base64');
    await setup.processor.store.admit(ref, [{ offset: records[0]!.offset, lane, payload: '{}' }]);
    await setup.processor.store.block(ref, { head: { lane, offset: records[0]!.offset, attempt: 3, state: 'retrying' } });

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(ran.sort((a, b) => a - b)).toEqual([1, 3, 5].map((i) => records[i]!.offset));
    const retried = await readTopic(`${setup.group}.retry.1s`, 1);
    expect(readHandOffHeaders(retried[0]!.headers!)).toMatchObject({ originOffset: records[0]!.offset, attempt: 3 });
    expect(await setup.redis.llen(parkKey(ref, lane))).toBe(2);
    expect((await frontierOf(setup))?.frontier).toBe(records[5]!.offset + 1);
  });

  it('orders by the lane keyOf derives from the value, and shares one lane for null keys when asked', async () => {
    // Prepare: Kafka keys all differ; the lane is the customer in the value (null for every fifth record).
    const byCustomer = new Map<string, number[]>();
    const inFlight = new Map<string, number>();
    let overlaps = 0;
    let maxInFlight = 0;
    let running = 0;
    const setup = await setUp({
      concurrency: 50,
      keyOf: (record) => (JSON.parse(record.value!.toString()) as { customer: string | null }).customer,
      nullKey: 'shared',
    }, async (record) => {
      const customer = String((record.value as { customer: string | null }).customer);
      byCustomer.set(customer, [...(byCustomer.get(customer) ?? []), record.offset]);
      inFlight.set(customer, (inFlight.get(customer) ?? 0) + 1);
      if (inFlight.get(customer)! > 1) overlaps += 1;
      running += 1;
      maxInFlight = Math.max(maxInFlight, running);
      await sleep(Math.random() * 3);
      running -= 1;
      inFlight.set(customer, inFlight.get(customer)! - 1);
    });
    await produce(setup.topic, Array.from({ length: 300 }, (_, i) => ({
      key: `order-${i}`,
      value: JSON.stringify({ customer: i % 5 === 0 ? null : `c${i % 7}` }),
    })));
    const records = await fetchRecords(setup.topic, 300);

    // Act
    await setup.processor.process(eventOf(records), contextWithin(60_000));

    // Assess: 7 customers and the shared null lane, each in offset order, never two at once.
    expect(byCustomer.size).toBe(8);
    for (const offsets of byCustomer.values()) expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(byCustomer.get('null')).toHaveLength(60);
    expect(overlaps).toBe(0);
    expect(maxInFlight).toBeGreaterThan(1);
  });

  it('reports a failed dead-letter write with the records waiting behind it in its lane, running none of them', async () => {
    const ran: number[] = [];
    const setup = await setUp({ concurrency: 10, deadLetter: { policy: 'release' } }, async (record) => {
      ran.push(record.offset);
      if (record.offset === 0) throw new NonRetriableError('bad');
    }, { brokers: ['127.0.0.1:1'] });
    await produce(setup.topic, [0, 1, 2].map(() => ({ key: 'a', value: '{}' })));
    const records = await fetchRecords(setup.topic, 3);

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(ran).toEqual([0]);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier.offset).sort()).toEqual([0, 1, 2]);
    expect((await frontierOf(setup))?.frontier).toBe(0);
  });

  it('hands a redelivered held head to the dead-letter topic again, and a retrying one with its due time', async () => {
    const ran: number[] = [];
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      ran.push(record.offset);
    });
    await produce(setup.topic, [{ key: 'held', value: '{}' }, { key: 'later', value: '{}' }]);
    const records = await fetchRecords(setup.topic, 2);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    // Due in 90 s: its retry tier is `1m`, the largest at most that far away.
    const dueAtMs = Date.now() + 90_000;
    // Earlier invocations blocked both lanes, then died before their hand-off writes were acknowledged.
    await setup.processor.store.admit(ref, [{ offset: 0, lane: laneOf('held') }, { offset: 1, lane: laneOf('later') }]);
    await setup.processor.store.block(ref, { head: { lane: laneOf('held'), offset: 0, attempt: 1, state: 'held', reason: 'non-retriable' } });
    await setup.processor.store.block(ref, { head: { lane: laneOf('later'), offset: 1, attempt: 3, state: 'retrying', dueAtMs } });

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(ran).toEqual([]);
    const [dead] = await readTopic(`${setup.group}.dlq`, 1);
    expect(readHandOffHeaders(dead!.headers!)).toMatchObject({ originOffset: 0, reason: 'non-retriable', attempt: 1 });
    const [retried] = await readTopic(`${setup.group}.retry.1m`, 1);
    expect(readHandOffHeaders(retried!.headers!)).toMatchObject({ originOffset: 1, attempt: 3, dueAtMs });
  });

  it('fails the invocation when a malformed record without an offset cannot be dead-lettered', async () => {
    const setup = await setUp({ concurrency: 10 }, async () => undefined, { brokers: ['127.0.0.1:1'] });
    await produce(setup.topic, messages(2, 2));
    const records = await fetchRecords(setup.topic, 2);
    const event = eventOf(records);
    Object.values(event.records)[0]!.push({ ...Object.values(event.records)[0]![0]!, offset: 'garbage' as unknown as number });

    await expect(setup.processor.process(event, contextWithin(60_000))).rejects.toBeInstanceOf(BatchNotHandedOffError);
  });

  it('reports records it could not hand off when the retry topic is unreachable, without marking them done', async () => {
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      if (String(record.key) === 'k1') throw new Error('fails');
    }, { brokers: ['127.0.0.1:1'] });
    await produce(setup.topic, messages(20, 4));
    const records = await fetchRecords(setup.topic, 20);

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    const failed = response.batchItemFailures.map((f) => f.itemIdentifier.offset);
    expect(failed).toContain(records[1]!.offset);
    expect(failed).not.toContain(records[0]!.offset);
    const f = await frontierOf(setup);
    expect(f?.frontier).toBe(records[1]!.offset);
  });

  it('reports every record and runs none when Redis is unreachable', async () => {
    let runs = 0;
    const unreachable = new Redis('redis://127.0.0.1:1', { maxRetriesPerRequest: 1, connectTimeout: 200, retryStrategy: () => null });
    unreachable.on('error', () => undefined);
    const setup = await setUp({ concurrency: 10 }, async () => {
      runs += 1;
    }, { redis: unreachable });
    await produce(setup.topic, messages(10, 3));
    const records = await fetchRecords(setup.topic, 10);

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(runs).toBe(0);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier.offset)).toEqual(records.map((r) => r.offset));
  });

  it('gives Redis up before the deadline when it stops answering, reporting the records', async () => {
    // A server that accepts connections and never answers: a node gone silent, or a connection dropped
    // while Lambda was frozen.
    const accepted = new Set<Socket>();
    const silent = createServer((socket) => accepted.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const mute = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1, retryStrategy: () => null });
    mute.on('error', () => undefined);
    let runs = 0;
    const setup = await setUp({ concurrency: 10, deadlineMarginMs: 1_000 }, async () => {
      runs += 1;
    }, { redis: mute });
    await produce(setup.topic, messages(3, 3));
    const records = await fetchRecords(setup.topic, 3);
    const context = contextWithin(3_000);

    try {
      const response = await setup.processor.process(eventOf(records), context);

      expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
      expect(runs).toBe(0);
      expect(response.batchItemFailures.map((f) => f.itemIdentifier.offset)).toEqual(records.map((r) => r.offset));
    } finally {
      mute.disconnect();
      // close() only stops accepting: the connection it holds would keep the test process alive.
      for (const socket of accepted) socket.destroy();
      silent.close();
    }
  });

  it('runs other partitions while a hand-off found at admission is still being written (G6)', async () => {
    const ran: number[] = [];
    let otherPartitionRan: () => void = () => undefined;
    const ranElsewhere = new Promise<void>((resolve) => {
      otherPartitionRan = resolve;
    });
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      ran.push(record.partition);
      if (record.partition === 1) otherPartitionRan();
    }, { partitions: 2 });
    await produce(setup.topic, [{ key: 'held', value: '{}', partition: 0 }, { key: 'free', value: '{}', partition: 1 }]);
    const records = await fetchRecords(setup.topic, 2);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    await setup.processor.store.admit(ref, [{ offset: 0, lane: laneOf('held') }]);
    await setup.processor.store.block(ref, { head: { lane: laneOf('held'), offset: 0, attempt: 2, state: 'retrying' } });
    // The re-hand-off of partition 0's head is written only once partition 1's record has run.
    const writer = setup.processor.parts.handOff([]);
    const processor = new LanesFunction({
      ...setup.processor.parts,
      handOff: () => ({
        write: async (items, options) => {
          await ranElsewhere;
          return writer.write(items, options);
        },
      }),
    });

    const response = await processor.process(eventOf(records), contextWithin(20_000));

    expect(response.batchItemFailures).toEqual([]);
    expect(ran).toEqual([1]);
    expect((await frontierOf(setup, 0))?.frontier).toBe(1);
  });

  it('fails the invocation instead when partial batch responses are off', async () => {
    const setup = await setUp({ concurrency: 10, partialBatchResponse: false }, async () => {
      throw new Error('fails');
    }, { brokers: ['127.0.0.1:1'] });
    await produce(setup.topic, messages(3, 3));
    const records = await fetchRecords(setup.topic, 3);

    await expect(setup.processor.process(eventOf(records), contextWithin(60_000))).rejects.toBeInstanceOf(BatchNotHandedOffError);
  });

  it('applies back-pressure at the window cap: refused records are reported, not dropped, and run when redelivered', async () => {
    const ran: number[] = [];
    const setup = await setUp({ concurrency: 10, caps: { maxWindow: 50 } }, async (record) => {
      ran.push(record.offset);
    });
    await produce(setup.topic, messages(120, 120));
    const records = await fetchRecords(setup.topic, 120);
    const ref = { group: setup.group, topic: setup.topic, partition: 0 };
    // Offset 0 was admitted by an earlier invocation that died before finishing it: it holds the frontier.
    await setup.processor.store.admit(ref, [{ offset: 0 }]);

    const first = await setup.processor.process(eventOf(records.slice(1)), contextWithin(60_000));

    expect(first.batchItemFailures.map((f) => f.itemIdentifier.offset)).toEqual(records.slice(50).map((r) => r.offset));
    expect([...ran].sort((a, b) => a - b)).toEqual(records.slice(1, 50).map((r) => r.offset));

    // Offset 0 becomes done (its redelivery ran it); the event source then redelivers from the lowest
    // reported offset, as often as needed: each delivery admits at most a window's worth beyond the frontier.
    await setup.processor.store.markDone(ref, [0]);
    let failures = first.batchItemFailures;
    let redeliveries = 0;
    while (failures.length > 0 && redeliveries < 5) {
      redeliveries += 1;
      const from = failures[0]!.itemIdentifier.offset;
      failures = (await setup.processor.process(eventOf(records.slice(from)), contextWithin(60_000))).batchItemFailures;
    }

    // 50..99 fit the window on the first redelivery, 100..119 on the second.
    expect(redeliveries).toBe(2);
    expect([...ran].sort((a, b) => a - b)).toEqual(records.slice(1).map((r) => r.offset));
    expect((await frontierOf(setup))?.frontier).toBe(120);
  });

  it('times out a record that ignores its signal, hands it to the retry topic and returns', async () => {
    const setup = await setUp({ concurrency: 10, recordTimeoutMs: 200 }, async (record, ctx) => {
      if (String(record.key) === 'k0') await new Promise(() => undefined);
      expect(ctx.signal.aborted).toBe(false);
    });
    await produce(setup.topic, messages(4, 2));
    const records = await fetchRecords(setup.topic, 4);

    const response = await setup.processor.process(eventOf(records), contextWithin(60_000));

    expect(response.batchItemFailures).toEqual([]);
    const retried = await readTopic(`${setup.group}.retry.1s`, 1);
    expect(readHandOffHeaders(retried[0]!.headers!)).toMatchObject({ errorName: 'RecordTimeoutError', attempt: 2, originOffset: records[0]!.offset });
  });

  it('retries after the delay a RetryLaterError asks for, in the tier that fits it', async () => {
    const setup = await setUp({ concurrency: 10 }, async () => {
      throw new RetryLaterError(90_000, 'rate limited');
    });
    await produce(setup.topic, messages(1, 1));
    const records = await fetchRecords(setup.topic, 1);
    const before = Date.now();

    await setup.processor.process(eventOf(records), contextWithin(60_000));

    const retried = await readTopic(`${setup.group}.retry.1m`, 1);
    const headers = readHandOffHeaders(retried[0]!.headers!);
    expect(headers.dueAtMs).toBeGreaterThanOrEqual(before + 90_000);
    expect(headers.errorMessage).toBe('rate limited');
  });

  it('logs one line per batch with its counts and emits CloudWatch EMF metrics', async () => {
    // Prepare: telemetry that really emits; standard output captured, where Lambda takes logs and EMF from.
    const previous = { metrics: process.env.POWERTOOLS_METRICS_DISABLED, level: process.env.POWERTOOLS_LOG_LEVEL };
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
    const setup = await setUp({ concurrency: 10 }, async (record) => {
      if (String(record.key) === 'k0') throw new Error('fails');
    });
    const telemetry = createTelemetry(setup.group);
    const processor = new LanesFunction({ ...setup.processor.parts, telemetry });
    await produce(setup.topic, messages(150, 4));
    const records = await fetchRecords(setup.topic, 150);
    const lines: string[] = [];
    const capture = (chunk: string | Uint8Array): boolean => {
      lines.push(...String(chunk).split('\n').filter((line) => line.startsWith('{')));
      return true;
    };
    // Warnings and errors go to standard error; Lambda takes both streams.
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(capture);
    const writeError = jest.spyOn(process.stderr, 'write').mockImplementation(capture);

    // Act
    try {
      await processor.process(eventOf(records), contextWithin(60_000));
    } finally {
      write.mockRestore();
      writeError.mockRestore();
      restoreEnv('POWERTOOLS_METRICS_DISABLED', previous.metrics);
      restoreEnv('POWERTOOLS_LOG_LEVEL', previous.level);
    }

    // Assess
    const json = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const batchLine = json.find((entry) => entry.message === 'batch processed');
    expect(batchLine).toMatchObject({ recordsIn: 150, done: 112, retried: 1, parked: 37, duplicates: 0, group: setup.group });
    expect(json.filter((entry) => String(entry.message).includes('No application metrics'))).toEqual([]);
    // Per-record lines only for failures: the one failed record of k0.
    expect(json.filter((entry) => entry.message === 'record failed')).toHaveLength(1);
    const emf = json.filter((entry) => entry._aws !== undefined);
    const names = new Set(emf.flatMap((entry) => (entry._aws as { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> }).CloudWatchMetrics.flatMap((m) => m.Metrics.map((metric) => metric.Name))));
    for (const name of ['RecordsIn', 'RecordsDone', 'RecordsSkippedAsDuplicate', 'RecordsParked', 'RecordsRetried', 'RecordsDeadLettered', 'HandlerLatency', 'BatchDuration', 'Frontier', 'HighestSeenOffset']) {
      expect(names).toContain(name);
    }
    const counts = emf.find((entry) => entry.RecordsIn !== undefined);
    expect(counts).toMatchObject({ RecordsIn: 150, RecordsDone: 112, RecordsRetried: 1, RecordsParked: 37 });
    // One blob per batch: the latency quantiles travel with the counts, at most 100 values.
    expect((counts!.HandlerLatency as number[]).length).toBeLessThanOrEqual(100);
  });
});
