import { encodeKafkaRecord } from '../../../src/event/encode';
import type { AwsKafkaRecord } from '../../../src/event/types';
import { nextEvent, readOutcomes, retryDelayMs, type NextEvent } from '../../../src/serverless/offline/batching';

const SIX_MB = 6 * 1024 * 1024;
const SELF_MANAGED = { source: 'SelfManagedKafka' } as const;

function records(count: number, valueBytes = 10, topic = 'orders-eu', partition = 3, from = 100): AwsKafkaRecord[] {
  return Array.from({ length: count }, (_, i) =>
    encodeKafkaRecord({ topic, partition, offset: from + i, timestamp: 1_700_000_000_000, key: Buffer.from(`k${i}`), value: Buffer.alloc(valueBytes, 120) }),
  );
}

/** Cuts queues into successive events the way the queues send them, one event after the other. */
function cutAll(queues: AwsKafkaRecord[][], batchSize: number, maxPayloadBytes = SIX_MB): NextEvent[] {
  const out: NextEvent[] = [];
  for (;;) {
    const next = nextEvent(queues, SELF_MANAGED, ['127.0.0.1:9092'], { batchSize, maxPayloadBytes });
    if (next === undefined) return out;
    out.push(next);
    next.parts.forEach((part, i) => queues[i]!.splice(0, part.length));
  }
}

describe('nextEvent (Lambda: at most batchSize records and 6 MB per invocation)', () => {
  it('cuts one partition at batchSize, in offset order, every record once', () => {
    // Act
    const events = cutAll([records(250)], 100);

    // Assess
    expect(events.map((e) => e.parts[0]!.length)).toEqual([100, 100, 50]);
    expect(events.flatMap((e) => e.parts[0]!.map((r) => r.offset))).toEqual(Array.from({ length: 250 }, (_, i) => 100 + i));
  });

  it('builds the AWS event: "<topic>-<partition>" keys, the source, the bootstrap servers as one string', () => {
    // Act
    const next = nextEvent([records(2)], { source: 'aws:kafka', eventSourceArn: 'arn:aws:kafka:eu-west-1:1:cluster/c/u' }, ['b1:9092', 'b2:9092'], {
      batchSize: 100,
      maxPayloadBytes: SIX_MB,
    });

    // Assess
    expect(next?.event).toEqual({
      eventSource: 'aws:kafka',
      eventSourceArn: 'arn:aws:kafka:eu-west-1:1:cluster/c/u',
      bootstrapServers: 'b1:9092,b2:9092',
      records: { 'orders-eu-3': records(2) },
    });
  });

  it('mixes partitions up to batchSize records in all, each partition a prefix of its queue', () => {
    // Prepare
    const p0 = records(30, 10, 'orders', 0);
    const p1 = records(30, 10, 'orders', 1, 500);
    const p2 = records(30, 10, 'orders', 2, 900);

    // Act
    const next = nextEvent([p0, p1, p2], SELF_MANAGED, [], { batchSize: 70, maxPayloadBytes: SIX_MB })!;

    // Assess
    expect(next.parts.map((part) => part.length)).toEqual([30, 30, 10]);
    expect(next.event.records).toEqual({ 'orders-0': p0, 'orders-1': p1, 'orders-2': p2.slice(0, 10) });
    expect(next.bytes).toBe(Buffer.byteLength(JSON.stringify(next.event)));
  });

  it('keeps every event within 6 MB of JSON, counted exactly, one partition or several', () => {
    // Act: 1 MB values are about 1.33 MB once base64-encoded: four fit in 6 MB, five do not.
    const single = cutAll([records(10, 1024 * 1024)], 10_000);
    const mixed = cutAll([records(3, 1024 * 1024, 't', 0), records(3, 1024 * 1024, 't', 1), records(3, 1024 * 1024, 't', 2)], 10_000);

    // Assess
    expect(single.map((e) => e.parts[0]!.length)).toEqual([4, 4, 2]);
    expect(mixed.map((e) => e.parts.map((part) => part.length))).toEqual([
      [3, 1, 0],
      [0, 2, 2],
      [0, 0, 1],
    ]);
    for (const next of [...single, ...mixed]) {
      expect(next.bytes).toBe(Buffer.byteLength(JSON.stringify(next.event)));
      expect(next.bytes).toBeLessThanOrEqual(SIX_MB);
    }
  });

  it('sends a record larger than the limit alone rather than stall the partition', () => {
    // Act
    const events = cutAll([records(3, 5 * 1024 * 1024)], 100);

    // Assess
    expect(events.map((e) => e.parts[0]!.length)).toEqual([1, 1, 1]);
    expect(events[0]!.bytes).toBeGreaterThan(SIX_MB);
  });

  it('gives nothing when every queue is empty', () => {
    expect(nextEvent([[], []], SELF_MANAGED, [], { batchSize: 10, maxPayloadBytes: SIX_MB })).toBeUndefined();
  });
});

describe('readOutcomes (what the event source mapping does with an invocation result, per partition)', () => {
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
    const [outcome] = readOutcomes(response, error, [batch], report);

    // Assess
    expect(outcome).toMatchObject(expected);
  });

  it('retries each partition of a mixed event from its own lowest failed record; the partitions not named are done', () => {
    // Prepare
    const parts = [records(4, 10, 'o', 0, 10), records(4, 10, 'o', 1, 20), records(4, 10, 'o', 2, 30)];

    // Act
    const outcomes = readOutcomes({ batchItemFailures: [failure(32, 'o-2'), failure(11, 'o-0'), failure(31, 'o-2')] }, undefined, parts, true);

    // Assess
    expect(outcomes).toMatchObject([{ kind: 'retry-from', offset: 11 }, { kind: 'success' }, { kind: 'retry-from', offset: 31, reason: '2 record(s) reported as failed' }]);
  });

  it('fails every partition of a mixed event on an error or a record the event does not hold', () => {
    // Prepare
    const parts = [records(2, 10, 'o', 0, 10), records(2, 10, 'o', 1, 20)];

    // Act
    const onError = readOutcomes(undefined, new Error('boom'), parts, false);
    const onUnknown = readOutcomes({ batchItemFailures: [failure(10, 'o-0'), failure(12, 'o-0')] }, undefined, parts, true);

    // Assess
    for (const outcomes of [onError, onUnknown]) expect(outcomes).toMatchObject([{ kind: 'retry-from', offset: 10 }, { kind: 'retry-from', offset: 20 }]);
  });
});

describe('retryDelayMs', () => {
  it('doubles from the initial delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 40].map((attempt) => retryDelayMs(attempt, 1_000, 10_000))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
  });
});
