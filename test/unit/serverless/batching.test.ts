import { encodeKafkaRecord } from '../../../src/event/encode';
import type { AwsKafkaRecord } from '../../../src/event/types';
import { cutBatches, readOutcome, retryDelayMs } from '../../../src/serverless/offline/batching';

const SIX_MB = 6 * 1024 * 1024;

function records(count: number, valueBytes = 10, topic = 'orders-eu', partition = 3): AwsKafkaRecord[] {
  return Array.from({ length: count }, (_, i) =>
    encodeKafkaRecord({ topic, partition, offset: 100 + i, timestamp: 1_700_000_000_000, key: Buffer.from(`k${i}`), value: Buffer.alloc(valueBytes, 120) }),
  );
}

describe('cutBatches (Lambda: at most batchSize records and 6 MB per invocation)', () => {
  it('cuts at batchSize, in offset order, every record once', () => {
    // Act
    const batches = cutBatches(records(250), { source: 'SelfManagedKafka' }, ['127.0.0.1:9092'], { batchSize: 100, maxPayloadBytes: SIX_MB });

    // Assess
    expect(batches.map((b) => b.records.length)).toEqual([100, 100, 50]);
    expect(batches.flatMap((b) => b.records.map((r) => r.offset))).toEqual(Array.from({ length: 250 }, (_, i) => 100 + i));
  });

  it('builds the AWS event: one "<topic>-<partition>" key, the source, the bootstrap servers as one string', () => {
    // Act
    const [first] = cutBatches(records(2), { source: 'aws:kafka', eventSourceArn: 'arn:aws:kafka:eu-west-1:1:cluster/c/u' }, ['b1:9092', 'b2:9092'], {
      batchSize: 100,
      maxPayloadBytes: SIX_MB,
    });

    // Assess
    expect(first?.event).toEqual({
      eventSource: 'aws:kafka',
      eventSourceArn: 'arn:aws:kafka:eu-west-1:1:cluster/c/u',
      bootstrapServers: 'b1:9092,b2:9092',
      records: { 'orders-eu-3': records(2) },
    });
  });

  it('keeps every event within 6 MB of JSON, counted exactly', () => {
    // Act: 1 MB values are about 1.33 MB once base64-encoded: four fit in 6 MB, five do not.
    const batches = cutBatches(records(10, 1024 * 1024), { source: 'SelfManagedKafka' }, ['127.0.0.1:9092'], { batchSize: 10_000, maxPayloadBytes: SIX_MB });

    // Assess
    expect(batches.map((b) => b.records.length)).toEqual([4, 4, 2]);
    for (const batch of batches) {
      expect(batch.bytes).toBe(Buffer.byteLength(JSON.stringify(batch.event)));
      expect(batch.bytes).toBeLessThanOrEqual(SIX_MB);
    }
  });

  it('sends a record larger than the limit alone rather than stall the partition', () => {
    // Act
    const batches = cutBatches(records(3, 5 * 1024 * 1024), { source: 'SelfManagedKafka' }, [], { batchSize: 100, maxPayloadBytes: SIX_MB });

    // Assess
    expect(batches.map((b) => b.records.length)).toEqual([1, 1, 1]);
    expect(batches[0]!.bytes).toBeGreaterThan(SIX_MB);
  });
});

describe('readOutcome (what the event source mapping does with an invocation result)', () => {
  const batch = records(4);
  const failure = (offset: number, partition = 'orders-eu-3') => ({ itemIdentifier: { partition, offset } });

  it.each([
    ['an error: the whole batch again', undefined, new Error('boom'), true, { kind: 'retry-from', offset: 100 }],
    ['no response', undefined, undefined, true, { kind: 'success' }],
    ['an empty list', { batchItemFailures: [] }, undefined, true, { kind: 'success' }],
    ['a null list', { batchItemFailures: null }, undefined, true, { kind: 'success' }],
    ['failures: from the lowest failed offset', { batchItemFailures: [failure(103), failure(101)] }, undefined, true, { kind: 'retry-from', offset: 101 }],
    ['failures without ReportBatchItemFailures: ignored', { batchItemFailures: [failure(101)] }, undefined, false, { kind: 'success' }],
    ['an unknown record: the whole batch', { batchItemFailures: [failure(999)] }, undefined, true, { kind: 'retry-from', offset: 100 }],
    ['another partition: the whole batch', { batchItemFailures: [failure(101, 'orders-eu-4')] }, undefined, true, { kind: 'retry-from', offset: 100 }],
    ['a string identifier (SQS style): the whole batch', { batchItemFailures: [{ itemIdentifier: '101' }] }, undefined, true, { kind: 'retry-from', offset: 100 }],
    ['a list that is not a list: the whole batch', { batchItemFailures: 'x' }, undefined, true, { kind: 'retry-from', offset: 100 }],
  ])('%s', (_what, response, error, report, expected) => {
    // Act
    const outcome = readOutcome(response, error, batch, report);

    // Assess
    expect(outcome).toMatchObject(expected);
  });
});

describe('retryDelayMs', () => {
  it('doubles from the initial delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 40].map((attempt) => retryDelayMs(attempt, 1_000, 10_000))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
  });
});
