import { encodeKafkaRecord } from '../../../src/event/encode';
import type { AwsKafkaEvent, AwsKafkaRecord } from '../../../src/event/types';
import { PartitionQueues, type PartitionOffset, type PartitionQueuesSettings } from '../../../src/serverless/offline/partition-queues';

const TOPIC = 'orders';

function records(partition: number, from: number, count: number): AwsKafkaRecord[] {
  return Array.from({ length: count }, (_, i) =>
    encodeKafkaRecord({ topic: TOPIC, partition, offset: from + i, timestamp: 1_700_000_000_000, key: Buffer.from(`k${i}`), value: Buffer.from('v') }),
  );
}

interface Call {
  readonly event: AwsKafkaEvent;
  /** Offsets per partition key. */
  readonly offsets: Record<string, number[]>;
  finish(result?: { response?: unknown; error?: unknown; left?: true }): void;
}

/** PartitionQueues with ports that record what happens; each invocation returns when the test finishes it. */
function harness(settings: Partial<PartitionQueuesSettings> = {}) {
  const calls: Call[] = [];
  const commits: PartitionOffset[][] = [];
  const releases: string[] = [];
  const warnings: string[] = [];
  const waiters: Array<() => void> = [];
  const notify = (): void => {
    for (const wake of waiters.splice(0)) wake();
  };
  const queues = new PartitionQueues(
    {
      functionKey: 'fn',
      eventSource: { source: 'SelfManagedKafka' },
      bootstrapServers: ['127.0.0.1:9092'],
      mixPartitions: true,
      reportBatchItemFailures: true,
      batchSize: 100,
      maxPayloadBytes: 6 * 1024 * 1024,
      retryDelayMs: 1,
      retryMaxDelayMs: 1,
      ...settings,
    },
    {
      invoke: (event) =>
        new Promise((resolve) => {
          const offsets = Object.fromEntries(Object.entries(event.records).map(([key, list]) => [key, list.map((r) => r.offset)]));
          calls.push({ event, offsets, finish: (result = {}) => resolve(result) });
          notify();
        }),
      commit: async (offsets) => {
        commits.push([...offsets]);
        notify();
      },
      release: (topic, partition, offset) => {
        releases.push(`${topic}-${partition}@${offset}`);
        notify();
      },
      warning: (message) => warnings.push(message),
    },
  );
  /** Waits (by events, not by time) until the condition holds. */
  const until = async (condition: () => boolean): Promise<void> => {
    while (!condition()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { queues, calls, commits, releases, warnings, until };
}

describe('PartitionQueues (the event source mapping per partition)', () => {
  it('lets a partition flow while another partition’s invocation is still running', async () => {
    // Prepare
    const { queues, calls, commits, releases, until } = harness({ mixPartitions: false });
    queues.add(TOPIC, 0, records(0, 0, 3));
    await until(() => calls.length === 1);

    // Act: partition 1 gets records, twice, while partition 0's invocation has not returned.
    queues.add(TOPIC, 1, records(1, 0, 2));
    await until(() => calls.length === 2);
    calls[1]!.finish();
    await until(() => releases.includes('orders-1@2'));
    queues.add(TOPIC, 1, records(1, 2, 2));
    await until(() => calls.length === 3);
    calls[2]!.finish();
    await until(() => releases.includes('orders-1@4'));

    // Assess
    expect(calls.map((c) => c.offsets)).toEqual([{ 'orders-0': [0, 1, 2] }, { 'orders-1': [0, 1] }, { 'orders-1': [2, 3] }]);
    expect(commits).toEqual([[{ topic: TOPIC, partition: 1, offset: 2 }], [{ topic: TOPIC, partition: 1, offset: 4 }]]);
    calls[0]!.finish();
    await until(() => releases.includes('orders-0@3'));
    expect(commits[2]).toEqual([{ topic: TOPIC, partition: 0, offset: 3 }]);
  });

  it('keeps one invocation in flight per partition: records fetched meanwhile follow in the next event, in order', async () => {
    // Prepare
    const { queues, calls, until } = harness();
    queues.add(TOPIC, 0, records(0, 0, 2));
    await until(() => calls.length === 1);

    // Act
    queues.add(TOPIC, 0, records(0, 2, 2));
    await new Promise((resolve) => setImmediate(resolve));
    const whileBusy = calls.length;
    calls[0]!.finish();
    await until(() => calls.length === 2);

    // Assess
    expect(whileBusy).toBe(1);
    expect(calls[1]!.offsets).toEqual({ 'orders-0': [2, 3] });
  });

  it('mixes the partitions handed over together into one event of at most batchSize records', async () => {
    // Prepare
    const { queues, calls, commits, until } = harness({ batchSize: 5 });

    // Act: one fetch's batches, handed over in one go.
    queues.add(TOPIC, 0, records(0, 10, 3));
    queues.add(TOPIC, 1, records(1, 20, 3));
    queues.add(TOPIC, 2, records(2, 30, 1));
    await until(() => calls.length === 2);
    for (const call of calls) call.finish();
    await until(() => calls.length === 3);
    calls[2]!.finish();
    await until(() => commits.length === 3);

    // Assess: every partition's records once and in order. The first event is full; partition 2 goes on in its
    // own meanwhile; partition 1's last record waits for the first event to return.
    expect(calls.map((c) => c.offsets)).toEqual([{ 'orders-0': [10, 11, 12], 'orders-1': [20, 21] }, { 'orders-2': [30] }, { 'orders-1': [22] }]);
    const byPartition = (key: string): number[] => calls.flatMap((c) => c.offsets[key] ?? []);
    expect([byPartition('orders-0'), byPartition('orders-1'), byPartition('orders-2')]).toEqual([[10, 11, 12], [20, 21, 22], [30]]);
    expect(Object.keys(calls[0]!.event.records).length).toBeGreaterThan(1);
  });

  it('sends one partition per event when mixPartitions is off', async () => {
    // Prepare
    const { queues, calls, until } = harness({ mixPartitions: false });

    // Act
    queues.add(TOPIC, 0, records(0, 0, 2));
    queues.add(TOPIC, 1, records(1, 0, 2));
    await until(() => calls.length === 2);

    // Assess
    expect(calls.map((c) => Object.keys(c.offsets))).toEqual(expect.arrayContaining([['orders-0'], ['orders-1']]));
  });

  it('after a partial batch response commits each partition below its lowest failed record and sends only the rest again', async () => {
    // Prepare
    const { queues, calls, commits, releases, warnings, until } = harness();
    queues.add(TOPIC, 0, records(0, 0, 3));
    queues.add(TOPIC, 1, records(1, 0, 3));
    await until(() => calls.length === 1);

    // Act
    calls[0]!.finish({ response: { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 1 } }] } });
    await until(() => calls.length === 2);
    calls[1]!.finish();
    await until(() => releases.length === 2);

    // Assess
    expect(calls[0]!.offsets).toEqual({ 'orders-0': [0, 1, 2], 'orders-1': [0, 1, 2] });
    expect(commits[0]).toEqual(expect.arrayContaining([{ topic: TOPIC, partition: 0, offset: 1 }, { topic: TOPIC, partition: 1, offset: 3 }]));
    expect(calls[1]!.offsets).toEqual({ 'orders-0': [1, 2] });
    expect(commits[1]).toEqual([{ topic: TOPIC, partition: 0, offset: 3 }]);
    expect(warnings).toEqual([expect.stringContaining('fn orders-0 from offset 1: 1 record(s) reported as failed')]);
  });

  it('sends every record of a failed invocation again and commits nothing of it', async () => {
    // Prepare
    const { queues, calls, commits, until } = harness();
    queues.add(TOPIC, 0, records(0, 0, 2));
    await until(() => calls.length === 1);

    // Act
    calls[0]!.finish({ error: new Error('downstream down') });
    await until(() => calls.length === 2);

    // Assess
    expect(commits).toEqual([]);
    expect(calls[1]!.offsets).toEqual({ 'orders-0': [0, 1] });
  });

  it('skips records fetched again that it holds already, and releases a partition that got nothing new', async () => {
    // Prepare
    const { queues, calls, releases, until } = harness();
    queues.add(TOPIC, 0, records(0, 0, 2));
    await until(() => calls.length === 1);
    calls[0]!.finish();
    await until(() => releases.length === 1);

    // Act: a fetch again from an older position (a rebalance kept the partition here).
    queues.add(TOPIC, 0, records(0, 0, 3));
    await until(() => calls.length === 2);
    calls[1]!.finish();
    await until(() => releases.length === 2);
    queues.add(TOPIC, 0, records(0, 1, 2));
    await until(() => releases.length === 3);

    // Assess
    expect(calls[1]!.offsets).toEqual({ 'orders-0': [2] });
    expect(releases).toEqual(['orders-0@2', 'orders-0@3', 'orders-0@3']);
  });

  it('drops a revoked partition’s records; its invocation in flight then commits nothing', async () => {
    // Prepare
    const { queues, calls, commits, releases, until } = harness({ mixPartitions: false });
    queues.add(TOPIC, 0, records(0, 0, 2));
    queues.add(TOPIC, 1, records(1, 0, 2));
    await until(() => calls.length === 2);

    // Act
    const dropped = queues.assign(new Set(['orders-1']));
    for (const call of calls) call.finish();
    await until(() => commits.length === 1 && queues.inFlight === 0);

    // Assess
    expect(dropped).toEqual([{ topic: TOPIC, partition: 0 }]);
    expect(commits).toEqual([[{ topic: TOPIC, partition: 1, offset: 2 }]]);
    expect(releases).toEqual(['orders-1@2']);
  });

  it('drains: the invocation in flight returns and commits, no other starts', async () => {
    // Prepare
    const { queues, calls, commits, until } = harness({ mixPartitions: false });
    queues.add(TOPIC, 0, records(0, 0, 2));
    await until(() => calls.length === 1);

    // Act
    queues.add(TOPIC, 1, records(1, 0, 2));
    const drained = queues.drain();
    calls[0]!.finish();
    await drained;

    // Assess
    expect(calls).toHaveLength(1);
    expect(commits).toEqual([[{ topic: TOPIC, partition: 0, offset: 2 }]]);
  });

  it('drains: a durable execution the stop left waiting commits nothing, sends nothing again and releases nothing', async () => {
    // Prepare
    const { queues, calls, commits, releases, warnings, until } = harness();
    queues.add(TOPIC, 0, records(0, 0, 2));
    await until(() => calls.length === 1);

    // Act
    const drained = queues.drain();
    calls[0]!.finish({ left: true });
    await drained;

    // Assess: its records are read again from the last commit when the trigger starts again.
    expect(calls).toHaveLength(1);
    expect(commits).toEqual([]);
    expect(releases).toEqual([]);
    expect(warnings).toEqual([]);
  });
});
