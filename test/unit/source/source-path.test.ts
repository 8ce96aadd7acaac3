/**
 * The source record path alone, against a fake run scope (no engine, no Redis, no Kafka): what a success, a
 * failure and the deadline make of a record and of the records behind it in its lane, and in which order.
 */
import { RECOVERY_RECHECK_MS } from '../../../src/durability/first-minute';
import { decodeKafkaEventLazily } from '../../../src/event';
import { SourcePath, type SourceTask } from '../../../src/source/source-path';
import { CompletionModelStore } from '../../../src/testing/completion-model';
import { fakeScope, laneOf, record, REFUSED, SOURCE_REF, T0, type FakeScope } from '../../support/fake-scope';

/** The path, given what the fake scope holds of a function's parts (its options, copies, logger). */
const pathOf = (scope: FakeScope<SourceTask>): SourcePath => new SourcePath(scope);
const PK = 'orders-0';

function task(offset: number, key: string, attempt = 1): SourceTask {
  return { partitionKey: PK, lane: laneOf(key), offset, ref: SOURCE_REF, record: record(offset, key), origin: { topic: 'orders', partition: 0, offset }, attempt };
}

/** Records waiting in the scheduler behind the running head of their lane. */
function waiting(scope: FakeScope<SourceTask>, key: string, ...offsets: number[]): void {
  scope.queued.set(`${PK}\n${laneOf(key)}`, offsets.map((offset) => task(offset, key)));
}

const lane = (scope: FakeScope<SourceTask>, key: string) => scope.model.partition(SOURCE_REF).lanes.get(laneOf(key));
const parked = (scope: FakeScope<SourceTask>, key: string) => scope.model.partition(SOURCE_REF).park.get(laneOf(key))?.map((p) => p.offset) ?? [];

describe('the source path: a record that succeeds', () => {
  it('is marked done and counted, and nothing is written', () => {
    const scope = fakeScope<SourceTask>();
    pathOf(scope).succeeded(scope, task(0, 'a'));
    expect(scope.events).toEqual(['done orders 0']);
    expect(scope.counts.get('done')).toBe(1);
  });
});

describe('the source path: a record that fails with attempts left', () => {
  it('blocks its lane and parks the records waiting behind it, then writes its retry copy, and only then is done', async () => {
    const scope = fakeScope<SourceTask>();
    waiting(scope, 'a', 1, 2);
    await pathOf(scope).failed(scope, task(0, 'a'), new Error('down'));
    expect(scope.events).toEqual(['block 0 retrying parking 1,2', 'write retry 0', 'done orders 0']);
    expect(lane(scope, 'a')).toMatchObject({ offset: 0, attempt: 2, state: 'retrying', dueAtMs: T0 + 1_000 });
    expect(parked(scope, 'a')).toEqual([1, 2]);
    expect(scope.written[0]).toMatchObject({ kind: 'retry', topic: 'grp.retry.1s', attempt: 2, dueAtMs: T0 + 1_000, lane: laneOf('a') });
    expect(Object.fromEntries(scope.counts)).toEqual({ retried: 1, parked: 2 });
  });

  it('leaves other lanes alone', async () => {
    const scope = fakeScope<SourceTask>();
    waiting(scope, 'b', 1);
    await pathOf(scope).failed(scope, task(0, 'a'), new Error('down'));
    expect(scope.queued.get(`${PK}\n${laneOf('b')}`)?.map((t) => t.offset)).toEqual([1]);
    expect(lane(scope, 'b')).toBeUndefined();
  });

  it('goes back to the event source when its copy cannot be written, and is not done', async () => {
    const scope = fakeScope<SourceTask>();
    scope.outcome = new Error('brokers unreachable');
    await pathOf(scope).failed(scope, task(0, 'a'), new Error('down'));
    expect(scope.events).toEqual(['block 0 retrying', 'write retry 0', 'redeliver 0']);
    expect(scope.done).toEqual([]);
  });

  it('is dead-lettered when the broker refuses its retry copy for good, and the lane moves on to its next parked record', async () => {
    const scope = fakeScope<SourceTask>();
    scope.outcome = (item) => (item.origin.offset === 0 ? REFUSED(item) : { status: 'written' });
    waiting(scope, 'a', 1);
    await pathOf(scope).failed(scope, task(0, 'a'), new Error('down'));
    expect(scope.events).toEqual([
      'block 0 retrying parking 1', 'write retry 0', 'release 0', 'write retry 1 deferred', 'advance 1 to 1 retrying', 'done orders 0',
    ]);
    expect(lane(scope, 'a')).toMatchObject({ offset: 1, attempt: 1, state: 'retrying', leaseUntilMs: 0 });
    expect(scope.counts.get('deadLettered')).toBe(1);
    expect(scope.counts.get('retried')).toBeUndefined();
  });
});

describe('the source path: a record dead-lettered', () => {
  it('under `release`: is written to the dead-letter topic and done; its lane is not blocked and its followers stay queued', async () => {
    const scope = fakeScope<SourceTask>();
    waiting(scope, 'a', 4);
    await pathOf(scope).failed(scope, task(3, 'a', 3), new Error('down'));
    expect(scope.events).toEqual(['write dead-letter 3', 'done orders 3']);
    expect(scope.written[0]).toMatchObject({ kind: 'dead-letter', topic: 'grp.dlq', attempt: 3, reason: 'attempts-exhausted' });
    expect(lane(scope, 'a')).toBeUndefined();
    expect(scope.queued.get(`${PK}\n${laneOf('a')}`)?.map((t) => t.offset)).toEqual([4]);
  });

  it('under `release`: a dead letter that cannot be written sends the record and every record behind it back, in order', async () => {
    const scope = fakeScope<SourceTask>();
    scope.outcome = new Error('brokers unreachable');
    waiting(scope, 'a', 4, 5);
    await pathOf(scope).failed(scope, task(3, 'a', 3), new Error('down'));
    expect(scope.redelivered).toEqual([3, 4, 5]);
    expect(scope.done).toEqual([]);
  });

  it('under `hold`: the lane is blocked as held only after the dead letter is written', async () => {
    const scope = fakeScope<SourceTask>({ deadLetter: { policy: 'hold' } });
    waiting(scope, 'a', 1);
    await pathOf(scope).failed(scope, task(0, 'a'), new TypeError('x is undefined'));
    expect(scope.events).toEqual(['write dead-letter 0', 'block 0 held parking 1', 'done orders 0']);
    expect(lane(scope, 'a')).toMatchObject({ offset: 0, attempt: 1, state: 'held', reason: 'programming-error' });
  });

  it('under `hold`, before the partition has its durable marker: a watch copy of the held head goes to the retry path', async () => {
    const scope = fakeScope<SourceTask>({ deadLetter: { policy: 'hold' } }, new CompletionModelStore(), { durablyMarked: async () => false });
    await pathOf(scope).failed(scope, task(0, 'a'), new TypeError('x is undefined'));
    expect(scope.events).toEqual(['write dead-letter 0', 'block 0 held', 'write retry 0 deferred', 'done orders 0']);
    expect(scope.written[1]).toMatchObject({ kind: 'retry', attempt: 1, dueAtMs: T0 + RECOVERY_RECHECK_MS });
  });
});

describe('the source path at the deadline', () => {
  it('blocks each lane on its first unstarted record as deferred, parks the rest, and hands the heads on with their attempt unchanged', async () => {
    const scope = fakeScope<SourceTask>();
    await pathOf(scope).deferUnstarted(scope, [task(0, 'a'), task(1, 'a'), task(2, 'b')]);
    expect(scope.events).toEqual(['block 0 retrying parking 1', 'block 2 retrying', 'write retry 0 deferred', 'write retry 2 deferred', 'done orders 0', 'done orders 2']);
    expect(lane(scope, 'a')).toMatchObject({ offset: 0, attempt: 1, reason: 'deferred' });
    expect(scope.written.map((item) => [item.origin.offset, item.attempt, item.topic])).toEqual([[0, 1, 'grp.retry.1s'], [2, 1, 'grp.retry.1s']]);
    expect(Object.fromEntries(scope.counts)).toEqual({ parked: 1, deferred: 2 });
  });

  it('sends a lane back to the event source, head and followers, when its block fails', async () => {
    const scope = fakeScope<SourceTask>();
    await scope.model.block(SOURCE_REF, { head: { lane: laneOf('a'), offset: 9, attempt: 2, state: 'retrying' } });
    await pathOf(scope).deferUnstarted(scope, [task(10, 'a'), task(11, 'a'), task(12, 'b')]);
    expect(scope.redelivered).toEqual([10, 11]);
    expect(scope.written.map((item) => item.origin.offset)).toEqual([12]);
  });
});

describe('the source path: admitting a batch', () => {
  const batch = (...records: Array<[number, string]>) => ({ topic: 'orders', partition: 0, records: records.map(([offset, key]) => record(offset, key)), failures: [] });

  it('runs the records of free lanes and parks those of a blocked lane behind its head', async () => {
    const scope = fakeScope<SourceTask>();
    await scope.model.block(SOURCE_REF, { head: { lane: laneOf('a'), offset: 0, attempt: 2, state: 'retrying' } });
    const { tasks } = await pathOf(scope).admit(scope, batch([1, 'a'], [2, 'b'], [3, 'a']));
    expect(tasks.map((t) => [t.offset, t.lane])).toEqual([[2, laneOf('b')]]);
    expect(parked(scope, 'a')).toEqual([1, 3]);
    expect(scope.counts.get('parked')).toBe(2);
  });

  it("hands a blocked lane's head, delivered again, off again as Redis recorded it instead of running it", async () => {
    const scope = fakeScope<SourceTask>();
    await scope.model.block(SOURCE_REF, { head: { lane: laneOf('a'), offset: 0, attempt: 2, state: 'retrying', dueAtMs: T0 + 5_000 } });
    const { tasks, handOffs } = await pathOf(scope).admit(scope, batch([0, 'a']));
    await handOffs;
    expect(tasks).toEqual([]);
    expect(scope.written).toEqual([expect.objectContaining({ kind: 'retry', attempt: 2, dueAtMs: T0 + 5_000 })]);
    expect(scope.done.map((d) => d.offset)).toEqual([0]);
  });

  it('sends the whole batch back to the event source when Redis refuses it', async () => {
    const scope = fakeScope<SourceTask>({}, new CompletionModelStore(), { admit: async () => Promise.reject(new Error('Redis down')) });
    const { tasks } = await pathOf(scope).admit(scope, batch([0, 'a'], [1, 'b'], [2, 'a']));
    expect(tasks).toEqual([]);
    expect(scope.redelivered).toEqual([0, 1, 2]);
  });

  it('refuses the records past the window for redelivery, never dropping one', async () => {
    const scope = fakeScope<SourceTask>({}, new CompletionModelStore(2));
    const { tasks } = await pathOf(scope).admit(scope, batch([0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']));
    expect(tasks.map((t) => t.offset)).toEqual([0, 1]);
    expect(scope.redelivered).toEqual([2, 3]);
    expect(scope.counts.get('refused')).toBe(2);
  });
});

describe('the source path: admitting a batch as AWS sends it', () => {
  it('gives records of one key one lane, whether its base64 is the canonical one or not, and makes each record only when asked', async () => {
    // Prepare: key `a` as `YQ==` (what encoding gives) and as `YR==` (padding bits set: the same byte), and a record of
    // another key; each item counts the reads of its value.
    const reads: number[] = [0, 0, 0];
    const item = (offset: number, key: string) => {
      const raw: Record<string, unknown> = { topic: 'orders', partition: 0, offset, timestamp: 1, timestampType: 'CREATE_TIME', key, headers: [] };
      Object.defineProperty(raw, 'value', { enumerable: true, get: () => { reads[offset]! += 1; return 'e30='; } });
      return raw;
    };
    const event = { eventSource: 'SelfManagedKafka', records: { 'orders-0': [item(0, 'YQ=='), item(1, 'YR=='), item(2, 'Yg==')] } };
    const scope = fakeScope<SourceTask>();
    const [batch] = decodeKafkaEventLazily(event).partitions;

    // Act
    const { tasks } = await pathOf(scope).admit(scope, batch!);
    const checked = [...reads];

    // Assess
    expect(tasks.map((t) => t.lane)).toEqual(['YQ==', 'YQ==', 'Yg==']);
    expect(tasks.map((t) => t.record.key?.toString('utf8'))).toEqual(['a', 'a', 'b']);
    expect(tasks[0]!.record).toBe(tasks[0]!.record);
    expect(checked.every((n) => n >= 1)).toBe(true);
    // Made when first read, once; the record whose key is not canonical was made at admission already, for its lane.
    expect(reads.map((n, i) => n - checked[i]!)).toEqual([1, 0, 1]);
  });
});
