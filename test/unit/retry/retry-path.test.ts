/**
 * The retry copy path alone, against a fake run scope (no engine, no Redis, no Kafka): when a copy runs, what its
 * success and failure do to its lane, and what becomes of a copy that must not run.
 */
import { RECOVERY_RECHECK_MS } from '../../../src/durability/first-minute';
import { parkPayload } from '../../../src/lanes/lane-heads';
import { RetryPath, type RetryTask } from '../../../src/retry/retry-path';
import { CompletionModelStore } from '../../../src/testing/completion-model';
import { copyRecord } from '../../support/engine-rig';
import { batchOf, fakeScope, laneOf, record, SOURCE_REF, T0, type FakeScope } from '../../support/fake-scope';

/** The path, given what the fake scope holds of a function's parts (its options, copies, logger). */
const pathOf = (scope: FakeScope<RetryTask>): RetryPath => new RetryPath(scope);
const TIER = 'grp.retry.1s';

/** Blocks `key`'s lane on `offset` at `attempt`, with `parked` behind it (as a failed source record leaves it). */
async function blocked(scope: FakeScope<RetryTask>, key: string, offset: number, attempt: number, parked: number[] = []): Promise<void> {
  await scope.model.block(SOURCE_REF, { head: { lane: laneOf(key), offset, attempt, state: 'retrying', dueAtMs: T0 }, parked: parked.map((p) => ({ offset: p, payload: parkPayload(record(p, key)) })) });
}

/** The retry copy of `offset` at `attempt`, read from its tier at `copyOffset` and admitted. */
async function copy(scope: FakeScope<RetryTask>, key: string, offset: number, attempt: number, dueAtMs = T0, copyOffset = 0): Promise<RetryTask> {
  const item = scope.copies.retry({ record: record(offset, key), origin: { topic: 'orders', partition: 0, offset }, lane: laneOf(key) }, { attempt, dueAtMs, firstFailureAtMs: T0 });
  const { tasks } = await pathOf(scope).admit(scope, batchOf([copyRecord(item, copyOffset)]));
  expect(tasks).toHaveLength(1);
  return tasks[0]!;
}

/** A partition state with nothing missing (its counts agree), born at 0 and admitted up to 10. */
const WHOLE_AUDIT = { present: true, base: 0, highest: 10, born: 0, generation: 'a1', parked: 0, parkedInLists: 0, lanes: 0, openLanes: 0, lowestHead: undefined, recoveringUntil: undefined, recoveries: 0 };

const head = (scope: FakeScope<RetryTask>, key: string) => scope.model.partition(SOURCE_REF).lanes.get(laneOf(key));

describe('the retry path: before a copy runs', () => {
  it("runs a due copy that is its lane's head, claiming the head until the copy's record deadline", async () => {
    const scope = fakeScope<RetryTask>({ recordTimeoutMs: 10_000 });
    await blocked(scope, 'a', 0, 2);
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(true);
    const other = await scope.model.claimHead(SOURCE_REF, laneOf('a'), { offset: 0, attempt: 2 }, { copy: 'elsewhere', nowMs: T0, untilMs: T0 + 1 });
    expect(other).toEqual({ status: 'claimed-elsewhere', untilMs: T0 + 10_000 });
  });

  it('drops a copy of an older attempt as stale: nothing runs, its own offset is done', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 3);
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('stale')).toBe(1);
    expect(scope.events).toEqual([`done ${TIER} 0`]);
    expect(scope.written).toEqual([]);
  });

  it('writes a twin back to its tier, due when the live claim of its head ends', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2);
    await scope.model.claimHead(SOURCE_REF, laneOf('a'), { offset: 0, attempt: 2 }, { copy: 'elsewhere', nowMs: T0, untilMs: T0 + 30_000 });
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.written).toEqual([expect.objectContaining({ kind: 'retry', attempt: 2, dueAtMs: T0 + 30_000 })]);
    expect(scope.counts.get('twins')).toBe(1);
    expect(scope.events).toEqual(['write retry 0', `done ${TIER} 0`]);
  });

  it('writes a copy due after the invocation can wait back to its tier unchanged, never running it early', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2);
    const late = await copy(scope, 'a', 0, 2, T0 + 120_000);
    expect(await pathOf(scope).prepare({ ...scope, stopStartingAt: T0 }, late)).toBe(false);
    expect(scope.written).toEqual([expect.objectContaining({ topic: 'grp.retry.1m', attempt: 2, dueAtMs: T0 + 120_000 })]);
    expect(scope.counts.get('writtenBack')).toBe(1);
  });

  it('leaves a copy not due waiting in a round of a durable execution: its head checked, nothing else touched', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2, [1]);
    const waiting = await copy(scope, 'a', 0, 2, T0 + 5_000);
    const before = { ...head(scope, 'a') };
    expect(await pathOf(scope).prepare({ ...scope, copyWait: { kind: 'suspend', untilMs: T0 + 60_000 } }, waiting)).toBe(false);
    expect(scope.events).toEqual(['waiting until 5000']);
    expect(scope.counts.get('waiting')).toBe(1);
    expect(head(scope, 'a')).toEqual(before);
  });

  it("keeps a copy whose lane is gone while its partition's state looks lost: written back for the recheck, not dropped", async () => {
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: WHOLE_AUDIT, originDone: false }) });
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('keptForRecovery')).toBe(1);
    expect(scope.counts.get('stale')).toBeUndefined();
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, dueAtMs: T0 + RECOVERY_RECHECK_MS })]);
  });

  it('keeps a copy not due yet waiting for its due time: back to its tier unchanged, never with a new due time', async () => {
    // Issue 39: a kept copy was written back due 30 s later on every pass, due or not, and its tier handed it straight back.
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: WHOLE_AUDIT, originDone: false }), reportLoss: async () => undefined });
    const late = await copy(scope, 'a', 0, 2, T0 + 120_000);
    expect(await pathOf(scope).prepare({ ...scope, stopStartingAt: T0 }, late)).toBe(false);
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, dueAtMs: T0 + 120_000 })]);
    expect(scope.counts.get('writtenBack')).toBe(1);
    // The first report of the loss is said (and counted) at once, even before the copy is due.
    expect(scope.counts.get('keptForRecovery')).toBe(1);
  });

  it('says a loss already reported once: a copy finding it reported is kept without a count', async () => {
    const reported = { ...WHOLE_AUDIT, lossReported: T0 - 1_000, lossReportedFrom: 0 };
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: reported, originDone: false }), reportLoss: async () => undefined });
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('keptForRecovery')).toBeUndefined();
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, dueAtMs: T0 + RECOVERY_RECHECK_MS })]);
  });

  it("watches its lane in a partition's first minute: a copy whose lane's head moved past it goes back, not dropped", async () => {
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: WHOLE_AUDIT, originDone: true }), durablyMarked: async () => false });
    await blocked(scope, 'a', 1, 1);
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('stale')).toBeUndefined();
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, dueAtMs: T0 + RECOVERY_RECHECK_MS })]);
  });

  it('drops that copy once the partition is marked: a loss is found against the marker from then on', async () => {
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: WHOLE_AUDIT, originDone: true }), durablyMarked: async () => true });
    await blocked(scope, 'a', 1, 1);
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('stale')).toBe(1);
    expect(scope.written).toEqual([]);
  });

  it('drops a copy whose lane is gone when nothing looks lost: its lane moved on', async () => {
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { originState: async () => ({ audit: WHOLE_AUDIT, originDone: true }) });
    expect(await pathOf(scope).prepare(scope, await copy(scope, 'a', 0, 2))).toBe(false);
    expect(scope.counts.get('stale')).toBe(1);
    expect(scope.written).toEqual([]);
  });
});

describe('the retry path: a copy that succeeds', () => {
  it('releases its lane and runs the next parked record at once, as attempt 1, then its own offset is done', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2, [1, 2]);
    await pathOf(scope).succeeded(scope, await copy(scope, 'a', 0, 2));
    expect(scope.events).toEqual(['release 0', 'enqueue 1', `done ${TIER} 0`]);
    expect(scope.enqueued[0]).toMatchObject({ from: 'drained', offset: 1, attempt: 1, origin: { topic: 'orders', partition: 0, offset: 1 } });
    expect(scope.enqueued[0]?.record.value?.toString()).toBe('{"offset":1}');
    expect(head(scope, 'a')).toMatchObject({ offset: 1, attempt: 1, leaseUntilMs: scope.leaseUntilMs });
  });

  it("in a partition's first minute, writes itself back as its lane's watch copy before the drain runs and before its own done bit", async () => {
    const scope = fakeScope<RetryTask>({}, new CompletionModelStore(), { durablyMarked: async () => false });
    await blocked(scope, 'a', 0, 2, [1, 2]);
    await pathOf(scope).succeeded(scope, await copy(scope, 'a', 0, 2));
    expect(scope.events).toEqual(['release 0', 'write retry 0', 'enqueue 1', `done ${TIER} 0`]);
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, dueAtMs: T0 + RECOVERY_RECHECK_MS, origin: expect.objectContaining({ offset: 0 }) })]);
  });

  it("releases holding the copy's claim, and a drained head's release holding its lease", async () => {
    const scope = fakeScope<RetryTask>();
    const holds: unknown[] = [];
    const release = scope.store.release.bind(scope.store);
    const store = { ...scope.store, release: (...args: Parameters<typeof release>) => (holds.push(args[1].hold), release(...args)) };
    await blocked(scope, 'a', 0, 2, [1, 2]);
    await pathOf(scope).succeeded({ ...scope, store }, await copy(scope, 'a', 0, 2, T0, 7));
    await pathOf(scope).succeeded({ ...scope, store }, scope.enqueued[0]!);
    expect(holds).toEqual([{ claim: `${TIER}:0:7` }, { lease: scope.leaseUntilMs }]);
  });

  it('frees the lane when nothing is parked behind it', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2);
    await pathOf(scope).succeeded(scope, await copy(scope, 'a', 0, 2));
    expect(head(scope, 'a')).toBeUndefined();
    expect(scope.model.partition(SOURCE_REF).model.isDone(0)).toBe(true);
  });
});

describe('the retry path: a copy that fails', () => {
  it('with attempts left: advances its head (leased, payload kept) before writing the next copy, then takes the lease off', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2, [1]);
    await pathOf(scope).failed(scope, await copy(scope, 'a', 0, 2), new Error('down'));
    expect(scope.events).toEqual(['advance 0 to 3 retrying leased', 'write retry 0', 'advance 0 to 3 retrying', `done ${TIER} 0`]);
    expect(scope.written[0]).toMatchObject({ kind: 'retry', attempt: 3, dueAtMs: T0 + 1_000 });
    expect(head(scope, 'a')).toMatchObject({ offset: 0, attempt: 3, leaseUntilMs: 0 });
    expect(scope.model.partition(SOURCE_REF).park.get(laneOf('a'))?.map((p) => p.offset)).toEqual([0, 1]);
  });

  it('with its attempts exhausted under `release`: is dead-lettered, then its lane is released and drains', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 3, [1]);
    await pathOf(scope).failed(scope, await copy(scope, 'a', 0, 3), new Error('down'));
    expect(scope.events).toEqual(['write dead-letter 0', 'release 0', 'enqueue 1', `done ${TIER} 0`]);
    expect(scope.written[0]).toMatchObject({ kind: 'dead-letter', attempt: 3, reason: 'attempts-exhausted' });
  });

  it('with its attempts exhausted under `hold`: is dead-lettered, then its head is held', async () => {
    const scope = fakeScope<RetryTask>({ deadLetter: { policy: 'hold' } });
    await blocked(scope, 'a', 0, 3, [1]);
    await pathOf(scope).failed(scope, await copy(scope, 'a', 0, 3), new Error('down'));
    expect(scope.events).toEqual(['write dead-letter 0', 'advance 0 to 3 held', `done ${TIER} 0`]);
    expect(head(scope, 'a')).toMatchObject({ offset: 0, state: 'held', reason: 'attempts-exhausted' });
    expect(scope.enqueued).toEqual([]);
  });

  it('does nothing more when its head was settled elsewhere meanwhile (counted stale)', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2);
    const task = await copy(scope, 'a', 0, 2);
    await scope.model.release(SOURCE_REF, { lane: laneOf('a'), headOffset: 0 });
    await pathOf(scope).failed(scope, task, new Error('down'));
    expect(scope.written).toEqual([]);
    expect(scope.counts.get('stale')).toBe(1);
  });
});

describe('the retry path at the deadline and on a fault of ours', () => {
  it('writes unstarted copies back to their tier and hands drained heads to the first tier, due now', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2, [1]);
    await blocked(scope, 'b', 5, 2);
    await pathOf(scope).succeeded(scope, await copy(scope, 'a', 0, 2));
    const drained = scope.enqueued[0]!;
    const waiting = await copy(scope, 'b', 5, 2, T0, 1);
    scope.events.length = 0;
    await pathOf(scope).deferUnstarted(scope, [drained, waiting]);
    expect(scope.events).toEqual(['write retry 5', 'write retry 1 deferred', `done ${TIER} 1`, 'advance 1 to 1 retrying']);
    expect(head(scope, 'a')).toMatchObject({ offset: 1, attempt: 1, leaseUntilMs: 0 });
    expect(Object.fromEntries(scope.counts)).toMatchObject({ writtenBack: 1, deferred: 1 });
  });

  it('sends a copy back to the event source, and leaves a drained head to the re-drive (its lease stays)', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2, [1]);
    const task = await copy(scope, 'a', 0, 2);
    await pathOf(scope).succeeded(scope, task);
    pathOf(scope).faulted(scope, task, new Error('ours'));
    pathOf(scope).faulted(scope, scope.enqueued[0]!, new Error('ours'));
    expect(scope.redelivered).toEqual([0]);
    expect(head(scope, 'a')?.leaseUntilMs).toBe(scope.leaseUntilMs);
  });
});

describe('the retry path: admitting copies', () => {
  it("dead-letters a copy whose headers do not say what it is, as malformed, and marks its own offset done", async () => {
    const scope = fakeScope<RetryTask>();
    const bare = { topic: TIER, partition: 0, offset: 7, timestamp: T0, key: Buffer.from('a'), value: Buffer.from('{}') };
    const { tasks, handOffs } = await pathOf(scope).admit(scope, batchOf([bare]));
    await handOffs;
    expect(tasks).toEqual([]);
    expect(scope.written).toEqual([expect.objectContaining({ kind: 'dead-letter', reason: 'malformed' })]);
    expect(scope.done.map((d) => `${d.ref.topic} ${d.offset}`)).toEqual([`${TIER} 7`]);
  });

  it('skips a copy whose own offset is done already (delivered twice)', async () => {
    const scope = fakeScope<RetryTask>();
    await blocked(scope, 'a', 0, 2);
    await copy(scope, 'a', 0, 2);
    await scope.model.markDone({ ...SOURCE_REF, topic: TIER }, [0]);
    const item = scope.copies.retry({ record: record(0, 'a'), origin: { topic: 'orders', partition: 0, offset: 0 }, lane: laneOf('a') }, { attempt: 2, dueAtMs: T0, firstFailureAtMs: T0 });
    const { tasks } = await pathOf(scope).admit(scope, batchOf([copyRecord(item, 0)]));
    expect(tasks).toEqual([]);
    expect(scope.counts.get('duplicates')).toBe(1);
  });
});
