import { CompletionStore } from '../../src/completion/store';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { z } from 'zod';
import { partitionKeys } from '../../src/completion';
import { encodeBase64, type AwsKafkaRecord } from '../../src/event';
import { HandOffWriter, readHandOffHeaders } from '../../src/handoff';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { LanesFunction, type LanesRecord, type RecordHandler } from '../../src/handler/lanes-function';
import { createTelemetry } from '../../src/telemetry';
import { checkEvent, freshTopic, fuzzRig, mutatedEvent, nested } from '../fuzz/bad-input-property';
import { deleteGroupKeys } from '../fuzz/stack';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { createTopic, KAFKA_BROKERS, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(300_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

let redis: Redis;
const groups: string[] = [];
const writers: HandOffWriter[] = [];

beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
});

afterAll(async () => {
  for (const group of groups) await deleteGroupKeys(redis, group);
  await Promise.all(writers.map((writer) => writer.disconnect()));
  redis.disconnect();
});

/** The hand-off writer of a group: its dead-letter topic takes the copies the broker refuses for good. */
function writerOf(group: string): HandOffWriter {
  const writer = new HandOffWriter(new Kafka({ clientId: 'bad-input-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${group}.dlq` });
  writers.push(writer);
  return writer;
}

async function newGroup(): Promise<string> {
  const group = uniqueName('bad');
  groups.push(group);
  const topics = [`${group}.retry.1s`, `${group}.retry.1m`, `${group}.dlq`];
  await Promise.all(topics.map((topic) => createTopic(topic, 1)));
  return group;
}

async function setUp(input: Partial<LanesOptionsInput>, handler: RecordHandler): Promise<{ group: string; topic: string; processor: LanesFunction }> {
  const group = await newGroup();
  const topic = uniqueName('src');
  await createTopic(topic, 1);
  const options = resolveOptions({ group, retry: { tiers: ['1s', '1m'] }, ...input } as LanesOptionsInput, {});
  const writer = writerOf(group);
  const processor = new LanesFunction({ options, handler, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group) });
  return { group, topic, processor };
}

async function frontier(group: string, topic: string): Promise<number> {
  const keys = partitionKeys({ group, topic, partition: 0 });
  const base = Number(await redis.hget(keys.meta, 'base'));
  let offset = base;
  while ((await redis.getbit(keys.bits, offset - base)) === 1) offset += 1;
  return offset;
}

describe('bad input through the processor, on the real broker and Redis', () => {
  it('runs a 3.4 MB value in an event near the 6 MB payload limit', async () => {
    // Prepare
    const sizes: number[] = [];
    const { topic, processor } = await setUp({ value: 'raw' }, async (record) => {
      sizes.push((record.value as Buffer).length);
    });
    await produce(topic, [{ key: 'k', value: 'small' }]);
    const [fetched] = await fetchRecords(topic, 1);
    const event = eventOf([fetched!, { ...fetched!, offset: fetched!.offset + 1, value: Buffer.alloc(3_400_000, 1) }]);
    expect(JSON.stringify(event).length).toBeGreaterThan(4_500_000);

    // Act
    const response = await processor.process(JSON.parse(JSON.stringify(event)), contextWithin(60_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(sizes.sort((a, b) => a - b)).toEqual([5, 3_400_000]);
  });

  it('dead-letters records nested 20,000 levels deep, in full, and runs the rest', async () => {
    // Prepare
    const seen: number[] = [];
    const { group, topic, processor } = await setUp({}, async (record) => {
      seen.push(record.offset);
    });
    await produce(topic, [1, 2, 3, 4].map((i) => ({ key: `k${i}`, value: JSON.stringify({ i }) })));
    const records = await fetchRecords(topic, 4);
    const event = eventOf(records);
    const list = Object.values(event.records)[0]!;
    const deep = nested(20_000);
    // A malformed record with a deep extra field, one with a deep key, and a valid one with a deep extra field.
    list[0] = { ...list[0]!, timestampType: 'NOPE' as never, extra: deep } as AwsKafkaRecord;
    list[1] = { ...list[1]!, key: deep as never };
    list[2] = { ...list[2]!, extra: deep } as AwsKafkaRecord;

    // Act
    const response = await processor.process(event, contextWithin(60_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(seen.sort()).toEqual([records[2]!.offset, records[3]!.offset]);
    const dead = await fetchRecords(`${group}.dlq`, 2);
    expect(dead.map((r) => readHandOffHeaders(r.headers!).reason)).toEqual(['malformed', 'malformed']);
    const copy = dead.find((r) => readHandOffHeaders(r.headers!).originOffset === records[0]!.offset)!;
    expect(copy.value!.length).toBeGreaterThan(40_000);
    expect(Buffer.from(copy.value!).toString('utf8').endsWith(`1${']'.repeat(20_000)}}`)).toBe(true);
    expect(await frontier(group, topic)).toBe(records[3]!.offset + 1);
  });

  it('runs identical copies of an offset once, and dead-letters every differing version with reason duplicate-offset', async () => {
    // Prepare
    const seen: Array<{ offset: number; value: unknown }> = [];
    const { group, topic, processor } = await setUp({}, async (record) => {
      seen.push({ offset: record.offset, value: record.value });
    });
    await produce(topic, [{ key: 'a', value: '{"n":1}' }, { key: 'b', value: '{"n":2}' }, { key: 'c', value: '{"n":3}' }]);
    const records = await fetchRecords(topic, 3);
    const event = eventOf(records);
    const list = Object.values(event.records)[0]!;
    list.push({ ...list[0]! });
    list.push({ ...list[1]!, value: encodeBase64(Buffer.from('{"n":"other"}')) });
    list.push({ ...list[1]!, timestampType: 'NOPE' as never });

    // Act
    const response = await processor.process(event, contextWithin(60_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(seen.sort((x, y) => x.offset - y.offset)).toEqual([{ offset: records[0]!.offset, value: { n: 1 } }, { offset: records[2]!.offset, value: { n: 3 } }]);
    const dead = await fetchRecords(`${group}.dlq`, 3);
    const headers = dead.map((r) => readHandOffHeaders(r.headers!));
    expect(headers.map((h) => [h.reason, h.originOffset])).toEqual(Array.from({ length: 3 }, () => ['duplicate-offset', records[1]!.offset]));
    expect(dead.map((r) => Buffer.from(r.value!).toString('utf8')).sort()).toEqual(expect.arrayContaining(['{"n":2}', '{"n":"other"}']));
    expect(await frontier(group, topic)).toBe(records[2]!.offset + 1);
  });

  it('validates values with a Standard Schema: a mismatch is dead-lettered with the issues and its lane goes on', async () => {
    // Prepare
    const order = z.object({ id: z.number(), lines: z.array(z.object({ qty: z.number().positive() })) });
    const seen: Array<z.infer<typeof order>> = [];
    const handler = async (record: LanesRecord<z.infer<typeof order>>): Promise<void> => {
      seen.push(record.value);
    };
    const { group, topic, processor } = await setUp({ value: order }, handler as RecordHandler);
    await produce(topic, [
      { key: 'a', value: '{"id":1,"lines":[{"qty":1}]}' },
      { key: 'a', value: '{"id":"two","lines":[{"qty":-1}]}' },
      { key: 'a', value: '{"id":3,"lines":[]}' },
    ]);
    const records = await fetchRecords(topic, 3);

    // Act
    const response = await processor.process(eventOf(records), contextWithin(60_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(seen).toEqual([{ id: 1, lines: [{ qty: 1 }] }, { id: 3, lines: [] }]);
    const [dead] = await fetchRecords(`${group}.dlq`, 1);
    const headers = readHandOffHeaders(dead!.headers!);
    expect(headers).toMatchObject({ reason: 'schema-validation', errorName: 'SchemaValidationError', originOffset: records[1]!.offset });
    expect(headers.errorMessage).toMatch(/value\.id: .*; value\.lines\[0\]\.qty: /);
    expect(Buffer.from(dead!.value!).toString()).toBe('{"id":"two","lines":[{"qty":-1}]}');
  });

  it('accounts for every record of mutated real-shaped events (property, a few hundred events)', async () => {
    // Prepare
    const group = await newGroup();
    const rig = fuzzRig(group, redis, writerOf(group));
    const outcomes = { 'decode-error': 0, processed: 0 };

    // Act and assess: each event is checked as it runs; bounded in count, and in time on a loaded machine.
    await fc.assert(
      fc.asyncProperty(mutatedEvent({ maxLargeValue: 400_000 }), async (build) => {
        outcomes[await checkEvent(rig, redis, build(freshTopic(`bi-${group}-`)))] += 1;
      }),
      { numRuns: 300, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: false },
    );
    expect(outcomes.processed).toBeGreaterThan(0);
  });
});
