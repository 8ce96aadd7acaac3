/**
 * A partition's batch larger than one admission chunk, on the in-memory completion model: records start while
 * later chunks are admitted, and nothing of that may break order per lane, exactly-once runs, the parking of a
 * failed head's followers (from every chunk), or the refusal of the rest of a batch (back-pressure, Redis down).
 * Only public behaviour is asserted: what ran, the batch response, the model store's state and calls.
 */
import type { AdmitRecord, AdmitResult } from '../../../src/ports/admission';
import type { PartitionRef } from '../../../src/ports/partition';
import { decodeKafkaEventLazily, encodeKafkaEvent, type KafkaBatchResponse } from '../../../src/event';
import { SourcePath } from '../../../src/source/source-path';
import { NonRetriableError } from '../../../src/errors';
import type { LanesOptionsInput } from '../../../src/options';
import { CompletionModelStore } from '../../../src/testing/completion-model';
import { drainRetries, engineRig, laneOf, offsetsByKey, RIG_REF, RIG_SOURCE, sourceRecords, within, type Rig } from '../../support/engine-rig';

const COUNT = 3_000;
const KEYS = 20;
const RECORDS = sourceRecords(COUNT, KEYS);
const keyOf = (offset: number): string => `k${offset % KEYS}`;
const offsetsOfKey = (key: string, from = 0, to = COUNT): number[] =>
  Array.from({ length: COUNT }, (_, i) => i).filter((i) => keyOf(i) === key && i >= from && i < to);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Varied handler latencies, so records of one chunk finish out of order. */
async function work(offset: number): Promise<void> {
  if (offset % 7 === 0) await sleep(1);
  else if (offset % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
  else await Promise.resolve();
}

/** A model store whose `admit` calls are observed (first offset, size), and may be delayed or fail. */
class ObservedStore extends CompletionModelStore {
  readonly admits: Array<{ first: number; size: number; ended: boolean }> = [];
  /** Runs before a call is applied; may wait or throw (Redis slow, or unreachable). */
  before: (call: number, records: readonly AdmitRecord[]) => Promise<void> | void = () => undefined;
  /** Runs after a call was applied, before its reply; may throw (the reply was lost). */
  after: (call: number, result: AdmitResult) => Promise<void> | void = () => undefined;
  /** Runs before a lane is blocked (a slow Redis). */
  beforeBlock: () => Promise<void> | void = () => undefined;

  override async admit(ref: PartitionRef, records: readonly AdmitRecord[]): Promise<AdmitResult> {
    const call = this.admits.length;
    const seen = { first: records[0]?.offset ?? -1, size: records.length, ended: false };
    this.admits.push(seen);
    try {
      await this.before(call, records);
      const result = await super.admit(ref, records);
      await this.after(call, result);
      return result;
    } finally {
      seen.ended = true;
    }
  }

  override async block(...args: Parameters<CompletionModelStore['block']>): Promise<number> {
    await this.beforeBlock();
    return super.block(...args);
  }
}

/** A promise with its resolve function. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function failedOffsets(response: KafkaBatchResponse): number[] {
  return response.batchItemFailures.map((f) => Number(f.itemIdentifier.offset)).sort((a, b) => a - b);
}

/**
 * The event source's redelivery after a partial batch response: the batch again from its lowest failed offset,
 * until nothing fails; then the retry copies until none is left.
 */
async function redeliverUntilDone(r: Rig, first: KafkaBatchResponse): Promise<void> {
  let response = first;
  for (let round = 0; response.batchItemFailures.length > 0; round += 1) {
    if (round >= 20) throw new Error(`still refused after 20 redeliveries: ${failedOffsets(response).length} records`);
    const from = failedOffsets(response)[0]!;
    response = await r.deliver(RECORDS.slice(from));
  }
  await drainRetries(r);
}

/** Every record ran once at attempt 1 (`retried` once more, after its first run), in offset order per key. */
function expectAllRanInOrder(r: Rig, retried: number[]): void {
  const firstRuns = r.runs.filter((run) => run.attempt === 1).map((run) => run.offset).sort((a, b) => a - b);
  expect(firstRuns).toEqual(range(0, COUNT));
  expect(r.runs.filter((run) => run.attempt > 1).map((run) => run.offset).sort((a, b) => a - b)).toEqual([...retried].sort((a, b) => a - b));
  const byKey = offsetsByKey(r.runs);
  for (let k = 0; k < KEYS; k += 1) {
    const key = `k${k}`;
    const expected = offsetsOfKey(key).flatMap((offset) => (retried.includes(offset) ? [offset, offset] : [offset]));
    expect({ key, offsets: byKey.get(key) }).toEqual({ key, offsets: expected });
  }
  expect(r.store.partition(RIG_REF).lanes.size).toBe(0);
  expect(r.store.partition(RIG_REF).model.frontier()).toBe(COUNT);
}

describe('chunked admission of a large batch (engine on the in-memory completion model)', () => {
  it('runs every record of a 3,000-record batch once, in offset order per lane, the first ones before the admission ends', async () => {
    // Prepare: later admission calls are slow, so records surely start before the last one returns.
    const store = new ObservedStore();
    store.before = (call) => (call > 0 ? sleep(20) : undefined);
    let admitsEndedAtFirstRun: number | undefined;
    const r = engineRig({ concurrency: 50 }, async (record) => {
      admitsEndedAtFirstRun ??= store.admits.filter((a) => a.ended).length;
      await work(record.origin.offset);
    }, store);

    // Act
    const response = await r.deliver(RECORDS);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(r.runs).toHaveLength(COUNT);
    expectAllRanInOrder(r, []);
    // The batch went to the store in several calls covering every offset once, in order.
    expect(store.admits.length).toBeGreaterThan(1);
    expect(store.admits.map((a) => a.first)).toEqual([...store.admits.map((a) => a.first)].sort((a, b) => a - b));
    expect(store.admits.reduce((sum, a) => sum + a.size, 0)).toBe(COUNT);
    expect(admitsEndedAtFirstRun).toBeLessThan(store.admits.length);
  });

  it('logs one partition in its batch line, however many admission calls its batch took', async () => {
    const r = engineRig({ concurrency: 50 }, () => undefined);
    const info = jest.spyOn(r.logger, 'info');

    await r.deliver(RECORDS);

    expect(r.store.calls.filter((c) => c === 'admit').length).toBeGreaterThan(1);
    expect(info).toHaveBeenCalledWith('batch processed', expect.objectContaining({ partitions: 1, done: COUNT }));
  });

  describe.each([
    { where: 'the first chunk', failAt: 3, ordering: 'key' as const, timeline: 'during' as const },
    { where: 'a middle chunk', failAt: 305, ordering: 'key' as const, timeline: 'during' as const },
    { where: 'the last chunk', failAt: 2_005, ordering: 'key' as const, timeline: 'during' as const },
    { where: 'the first chunk, partition ordering', failAt: 3, ordering: 'partition' as const, timeline: 'during' as const },
    { where: 'the first chunk, failing once the whole batch is admitted', failAt: 3, ordering: 'key' as const, timeline: 'after' as const },
  ])('a head in $where', ({ failAt, ordering, timeline }) => {
    it('parks its followers from every chunk in offset order, none of them ran; its retry then runs them in order', async () => {
      // Prepare: the record at `failAt` fails once. 'during': admission calls past it are applied only once it
      // failed, while its lane is not blocked in the store yet (blocking takes 20 ms), and answered 10 ms
      // later; 'after': it fails only once every admission call has been answered.
      const failed = gate();
      const store = new ObservedStore();
      if (timeline === 'during') {
        store.before = async (_call, records) => {
          if (records[0]!.offset > failAt) await failed.promise;
        };
        store.after = () => sleep(10);
        store.beforeBlock = () => sleep(20);
      }
      const r = engineRig({ concurrency: 50, ordering } as Partial<LanesOptionsInput>, async (record, ctx) => {
        await work(record.origin.offset);
        if (record.origin.offset === failAt && ctx.attempt === 1) {
          if (timeline === 'after') {
            while (!store.admits.every((a) => a.ended) || store.admits.reduce((sum, a) => sum + a.size, 0) < COUNT) await sleep(5);
          }
          failed.open();
          throw new Error('flaky');
        }
      }, store);
      const inLane = (offset: number): boolean => ordering === 'partition' || keyOf(offset) === keyOf(failAt);
      const followers = range(failAt + 1, COUNT).filter(inLane);

      // Act
      const response = await r.deliver(RECORDS);

      // Assess: the head ran, its lane's later records did not; every other record ran once.
      expect(response.batchItemFailures).toEqual([]);
      expect(r.runs.map((run) => run.offset).filter((offset) => offset > failAt && inLane(offset))).toEqual([]);
      expect(r.runs.map((run) => run.offset).sort((a, b) => a - b)).toEqual(range(0, COUNT).filter((o) => o <= failAt || !inLane(o)));
      const { lanes, park, model } = r.store.partition(RIG_REF);
      expect([...lanes.values()].map((head) => [head.offset, head.attempt, head.state])).toEqual([[failAt, 2, 'retrying']]);
      const [lane] = [...lanes.keys()];
      if (ordering === 'key') expect(lane).toBe(laneOf(keyOf(failAt)));
      expect(park.get(lane!)?.map((p) => p.offset)).toEqual(followers);
      expect(model.frontier()).toBe(COUNT);
      expect(r.sink.items.map((item) => [item.kind, item.origin.offset])).toEqual([['retry', failAt]]);
      const before = r.runs.length;

      // Act: the retry copy comes back and succeeds.
      await drainRetries(r);

      // Assess
      expect(r.runs.slice(before).map((run) => run.offset)).toEqual([failAt, ...followers]);
      expectAllRanInOrder(r, [failAt]);
    });
  });

  it.each(['hold', 'release'] as const)('dead-letters a non-retriable head of the first chunk under %s: its lane\'s later chunks follow the policy', async (policy) => {
    // Prepare
    const failAt = 3;
    const failed = gate();
    const store = new ObservedStore();
    store.before = async (_call, records) => {
      if (records[0]!.offset > failAt) {
        await failed.promise;
        await sleep(5);
      }
    };
    const r = engineRig({ concurrency: 50, deadLetter: { policy } }, async (record) => {
      await work(record.origin.offset);
      if (record.origin.offset === failAt) {
        setTimeout(failed.open, 5);
        throw new NonRetriableError('bad record');
      }
    }, store);
    const followers = offsetsOfKey(keyOf(failAt), failAt + 1);

    // Act
    const response = await r.deliver(RECORDS);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(r.sink.items.map((item) => [item.kind, item.origin.offset])).toEqual([['dead-letter', failAt]]);
    const { lanes, park, model } = r.store.partition(RIG_REF);
    const laneRuns = r.runs.filter((run) => run.key === keyOf(failAt)).map((run) => run.offset);
    if (policy === 'hold') {
      expect(laneRuns).toEqual(offsetsOfKey(keyOf(failAt), 0, failAt + 1));
      expect(lanes.get(laneOf(keyOf(failAt)))).toMatchObject({ offset: failAt, state: 'held' });
      expect(park.get(laneOf(keyOf(failAt)))?.map((p) => p.offset)).toEqual(followers);
    } else {
      expect(laneRuns).toEqual(offsetsOfKey(keyOf(failAt)));
      expect(lanes.size).toBe(0);
    }
    expect(r.runs).toHaveLength(policy === 'hold' ? COUNT - followers.length : COUNT);
    expect(model.frontier()).toBe(COUNT);
  });

  it.each([
    { head: 'no record fails', failAt: undefined },
    { head: "k3's head fails once", failAt: 3 },
  ])('refuses the rest of the batch from a back-pressured middle chunk ($head); no later record of a lane runs; redelivery completes all in order', async ({ failAt }) => {
    // Prepare: a window of 600 records; nothing finishes before the admission has been refused, so the frontier
    // stays at 0 until then and exactly the offsets from 600 on are refused. Were another call made after the
    // refusal, it would be held until the window moved (every record below 600 done, if none fails).
    const store = new ObservedStore(600);
    const admissionOver = gate();
    let refused = false;
    store.after = (_call, result) => {
      if (!result.backPressure) return;
      refused = true;
      admissionOver.open();
    };
    store.before = async () => {
      for (let i = 0; refused && i < 200 && (store.partition(RIG_REF).model.frontier() ?? 0) < 600; i += 1) await sleep(5);
    };
    const r = engineRig({ concurrency: 50 }, async (record, ctx) => {
      await admissionOver.promise;
      await work(record.origin.offset);
      if (record.origin.offset === failAt && ctx.attempt === 1) throw new Error('flaky');
    }, store);
    const parked = failAt === undefined ? [] : offsetsOfKey(keyOf(failAt), failAt + 1, 600);

    // Act
    const first = await r.deliver(RECORDS);

    // Assess: 600 lies past the first admission call; from it on, everything is reported and nothing ran.
    expect(store.admits[0]!.first + store.admits[0]!.size).toBeLessThanOrEqual(600);
    expect(failedOffsets(first)).toEqual(range(600, COUNT));
    expect(r.runs.map((run) => run.offset).sort((a, b) => a - b)).toEqual(range(0, 600).filter((o) => !parked.includes(o)));
    if (failAt !== undefined) expect(r.store.partition(RIG_REF).park.get(laneOf(keyOf(failAt)))?.map((p) => p.offset)).toEqual(parked);

    // Act: the event source redelivers from the first refused offset; then the retry copy comes back.
    await redeliverUntilDone(r, first);

    // Assess
    expectAllRanInOrder(r, failAt === undefined ? [] : [failAt]);
  });

  it.each([
    { lost: 'the call (not applied)', applied: false },
    { lost: 'the reply (applied, not answered)', applied: true },
  ])('reports the rest of the batch for redelivery when Redis fails on the 2nd chunk: $lost', async ({ applied }) => {
    // Prepare: the second admission call fails once; k3's head (first chunk) fails once.
    const store = new ObservedStore();
    const down = new Error('Connection is closed.');
    let failures = 0;
    if (applied) {
      store.after = (call) => {
        if (call === 1 && failures++ === 0) throw down;
      };
    } else {
      store.before = (call) => {
        if (call === 1 && failures++ === 0) throw down;
      };
    }
    const r = engineRig({ concurrency: 50 }, async (record, ctx) => {
      await work(record.origin.offset);
      if (record.origin.offset === 3 && ctx.attempt === 1) throw new Error('flaky');
    }, store);

    // Act
    const first = await r.deliver(RECORDS);

    // Assess: the first chunk ran (k3 parked behind its head); from the second chunk on, all reported, none ran.
    const cut = store.admits[1]!.first;
    expect(cut).toBeGreaterThan(3);
    expect(failedOffsets(first)).toEqual(range(cut, COUNT));
    expect(r.runs.map((run) => run.offset).sort((a, b) => a - b)).toEqual(range(0, cut).filter((o) => keyOf(o) !== 'k3' || o === 3));
    expect(r.store.partition(RIG_REF).park.get(laneOf('k3'))?.map((p) => p.offset)).toEqual(offsetsOfKey('k3', 4, cut));

    // Act: redelivery from the first reported offset, then the retry copy.
    await redeliverUntilDone(r, first);

    // Assess
    expectAllRanInOrder(r, [3]);
  });

  it('defers what was admitted after the deadline stopped new starts, and a redelivery of the copies completes all in order', async () => {
    // Prepare: 1.5 s to run with a 1 s margin: records stop starting after ~0.5 s, while the later chunks are
    // still being admitted (each call past the first waits 300 ms).
    const store = new ObservedStore();
    store.before = (call) => (call > 0 ? sleep(300) : undefined);
    const r = engineRig({ concurrency: 50 }, (record) => work(record.origin.offset), store);

    // Act
    const response = await r.deliver(RECORDS, 1_500);

    // Assess: nothing is reported; chunks admitted after the stop did not run, their lanes' heads were handed
    // off as deferred (attempt unchanged) with the lanes' later records parked behind them.
    expect(response.batchItemFailures).toEqual([]);
    expect(store.admits.length).toBeGreaterThan(2);
    expect(r.runs.length).toBeLessThan(COUNT);
    const deferred = r.sink.items.filter((item) => item.kind === 'retry');
    expect(deferred.length).toBeGreaterThan(0);
    expect(deferred.every((item) => item.deferred && item.attempt === 1)).toBe(true);
    expect(r.store.partition(RIG_REF).model.frontier()).toBe(COUNT);

    // Act: the copies come back.
    await drainRetries(r);

    // Assess
    expectAllRanInOrder(r, []);
  });

  it('runs two partitions admitted in chunks side by side: a failing head in each parks only its own lane, from every chunk', async () => {
    // Prepare: partition 1 holds the same layout with keys q0..q19; offset 3 fails once in both partitions, and
    // admission calls past the first of each partition wait until both failures happened.
    const other = RECORDS.map((record, i) => ({ ...record, partition: 1, key: Buffer.from(`q${i % KEYS}`) }));
    const failures = { count: 0, both: gate() };
    const store = new ObservedStore();
    store.before = async (_call, records) => {
      if (records[0]!.offset > 3) await failures.both.promise;
    };
    store.after = () => sleep(5);
    const r = engineRig({ concurrency: 50 }, async (record, ctx) => {
      await work(record.origin.offset);
      if (record.origin.offset === 3 && ctx.attempt === 1) {
        failures.count += 1;
        if (failures.count === 2) failures.both.open();
        throw new Error('flaky');
      }
    }, store);

    // Act
    const response = await r.deliver([...RECORDS, ...other]);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    for (const [partition, key] of [[0, 'k3'], [1, 'q3']] as const) {
      const { lanes, park, model } = r.store.partition({ ...RIG_REF, partition });
      expect([...lanes.keys()]).toEqual([laneOf(key)]);
      expect(park.get(laneOf(key))?.map((p) => p.offset)).toEqual(offsetsOfKey('k3', 4));
      expect(model.frontier()).toBe(COUNT);
    }
    expect(r.runs.filter((run) => run.key === 'k3' || run.key === 'q3').map((run) => run.offset)).toEqual([3, 3]);
    expect(r.runs).toHaveLength(2 * (COUNT - offsetsOfKey('k3', 4).length));

    // Act: both retry copies come back.
    await drainRetries(r);

    // Assess: per key, every offset once (offset 3 twice for k3 and q3), in offset order.
    const byKey = offsetsByKey(r.runs);
    for (let k = 0; k < KEYS; k += 1) {
      for (const key of [`k${k}`, `q${k}`]) {
        const expected = offsetsOfKey(`k${k}`).flatMap((offset) => (k === 3 && offset === 3 ? [3, 3] : [offset]));
        expect({ key, offsets: byKey.get(key) }).toEqual({ key, offsets: expected });
      }
    }
  });

  it('dead-letters malformed records of every chunk with their reason, and runs every other record once, in order per lane', async () => {
    // Prepare: records that cannot be decoded in the first, second and last chunks (256, 512, 1,024, then the rest).
    const r = engineRig({ concurrency: 50 }, (record) => work(record.origin.offset));
    const malformed = [5, 300, 1_500, 2_999];
    const event = encodeKafkaEvent({ source: 'SelfManagedKafka', records: RECORDS });
    const list = event.records[`${RIG_SOURCE}-0`]!;
    for (const offset of malformed) list[offset] = { ...list[offset]!, value: 'not base64!' };

    // Act: the event decoded as the function decodes it.
    const response = await r.engine.run(new SourcePath(r.paths), decodeKafkaEventLazily(event).partitions, r.sink, within(60_000));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const dead = r.sink.items.filter((item) => item.kind === 'dead-letter');
    expect(dead.map((item) => item.origin?.offset ?? -1).sort((a, b) => a - b)).toEqual(malformed);
    for (const item of dead) {
      expect(item.reason).toBe('malformed');
      expect(item.error?.message).toMatch(/Cannot decode record \d+ of `orders-0` \(offset \d+\): Expected `value` to be a base64 string/);
    }
    const byKey = offsetsByKey(r.runs);
    for (let k = 0; k < KEYS; k += 1) {
      const key = `k${k}`;
      expect({ key, offsets: byKey.get(key) }).toEqual({ key, offsets: offsetsOfKey(key).filter((offset) => !malformed.includes(offset)) });
    }
    expect(r.runs).toHaveLength(COUNT - malformed.length);
    expect(r.store.partition(RIG_REF).model.frontier()).toBe(COUNT);
  });

  it('runs a batch with a repeated offset once per offset, and a redelivery of the whole batch runs nothing again', async () => {
    // Prepare: offset 1,000 delivered twice, identically (the batch takes the planned path, not the plain one).
    const r = engineRig({ concurrency: 50 }, (record) => work(record.origin.offset));
    const repeated = [...RECORDS.slice(0, 1_001), RECORDS[1_000]!, ...RECORDS.slice(1_001)];

    // Act
    const first = await r.deliver(repeated);
    const again = await r.deliver(RECORDS);

    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    expect(r.store.calls.filter((c) => c === 'admit').length).toBeGreaterThan(2);
    expectAllRanInOrder(r, []);
    expect(r.runs).toHaveLength(COUNT);
  });

  it('reports a failing head and its followers from every chunk when Redis fails to block its lane; none ran; redelivery completes all in order', async () => {
    // Prepare: blocking k3's lane fails once (Redis down); admission calls past the first chunk wait for k3's
    // head to fail, so its followers of later chunks are still being admitted when it does.
    const failed = gate();
    const store = new ObservedStore();
    let blocks = 0;
    store.before = async (_call, records) => {
      if (records[0]!.offset > 3) await failed.promise;
    };
    store.beforeBlock = () => {
      if (blocks++ === 0) throw new Error('Connection is closed.');
    };
    const r = engineRig({ concurrency: 50 }, async (record, ctx) => {
      await work(record.origin.offset);
      if (record.origin.offset === 3 && ctx.attempt === 1) {
        failed.open();
        throw new Error('flaky');
      }
    }, store);

    // Act
    const first = await r.deliver(RECORDS);

    // Assess: k3's head and all its later records are reported; none of those later records ran.
    expect(failedOffsets(first)).toEqual(offsetsOfKey('k3', 3));
    expect(r.runs.filter((run) => run.key === 'k3').map((run) => run.offset)).toEqual([3]);
    expect(r.store.partition(RIG_REF).lanes.size).toBe(0);
    expect(r.store.partition(RIG_REF).model.frontier()).toBe(3);

    // Act: the event source redelivers from offset 3; the head fails again (attempt 1 again: it was never
    // handed off), this time its lane is blocked, then its retry copy comes back.
    await redeliverUntilDone(r, first);

    // Assess: k3's head ran at attempt 1 twice, then its retry; all else once, in order.
    const k3 = r.runs.filter((run) => run.key === 'k3');
    expect(k3.slice(0, 3).map((run) => [run.offset, run.attempt])).toEqual([[3, 1], [3, 1], [3, 2]]);
    expect(k3.slice(3).map((run) => run.offset)).toEqual(offsetsOfKey('k3', 4));
    expect(r.runs.filter((run) => run.key !== 'k3').map((run) => run.offset).sort((a, b) => a - b))
      .toEqual(range(0, COUNT).filter((o) => keyOf(o) !== 'k3'));
    expect(r.store.partition(RIG_REF).lanes.size).toBe(0);
    expect(r.store.partition(RIG_REF).model.frontier()).toBe(COUNT);
  });
});
