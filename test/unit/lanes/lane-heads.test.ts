/**
 * The lane-head moves alone (`lanes/lane-heads.ts`), on the in-memory completion model and a recording hand-off
 * write (no Redis, no Kafka): handing a lane's new head off, the dead-letter policy, the watch copy of a held head,
 * and what a park list keeps of a record.
 */
import { RECOVERY_RECHECK_MS } from '../../../src/durability/first-minute';
import { applyDeadLetterPolicy, decodeParked, handOffNewHead, parkPayload, watchHeldHead } from '../../../src/lanes/lane-heads';
import type { EngineTask } from '../../../src/engine/run-scope';
import { fakeScope, laneOf, record, REFUSED, SOURCE_REF, T0, type FakeScope } from '../../support/fake-scope';

type Scope = FakeScope<EngineTask>;

const FIRST_TIER = 'grp.retry.1s';
const DLQ = 'grp.dlq';
const LEASE = T0 + 90_000;
const REFUSAL = { reason: 'too-large' };

/** Blocks `key`'s lane on `head` (attempt 3, retrying), with `parked` behind it, as the retry path leaves a lane. */
async function blockedLane(scope: Scope, key: string, head: number, parked: number[] = []): Promise<void> {
  await scope.model.block(SOURCE_REF, { head: { lane: laneOf(key), offset: head, attempt: 3, state: 'retrying', dueAtMs: T0 }, parked: parked.map((p) => ({ offset: p, payload: parkPayload(record(p, key)) })), nowMs: T0 });
  scope.events.length = 0;
}

/** Releases `key`'s lane off its head onto the next parked record, leased, as a release before a hand-off does. */
async function releasedOnto(scope: Scope, key: string, head: number, attempt = 1) {
  const next = await scope.model.release(SOURCE_REF, { lane: laneOf(key), headOffset: head, nextAttempt: attempt, nowMs: T0, leaseUntilMs: LEASE });
  if (next === undefined) throw new Error(`nothing was parked behind offset ${head}`);
  return next;
}

const headOf = (scope: Scope, key: string) => scope.model.partition(SOURCE_REF).lanes.get(laneOf(key));
const parkedOf = (scope: Scope, key: string) => (scope.model.partition(SOURCE_REF).park.get(laneOf(key)) ?? []).map((p) => p.offset);

describe('what a park list keeps of a record', () => {
  it('gives the record back as it was delivered: topic, partition, offset, key, value and headers', () => {
    const original = record(7, 'c-1');
    const back = decodeParked(parkPayload(original));
    expect(back).toEqual(original);
    expect(back.key?.toString()).toBe('c-1');
    expect(back.value?.toString()).toBe('{"offset":7}');
  });

  it('throws a SyntaxError for a payload that is not a record (a corrupted park list), never a record made up', () => {
    expect(() => decodeParked(JSON.stringify({ topic: 'orders', partition: 0 }))).toThrow(SyntaxError);
    expect(() => decodeParked('not json')).toThrow(SyntaxError);
  });
});

describe('handOffNewHead', () => {
  it("writes the new head's copy to the first tier, due now and deferred at its attempt, then takes the lease off", async () => {
    const scope = fakeScope<EngineTask>();
    await blockedLane(scope, 'a', 0, [1, 2]);
    const next = await releasedOnto(scope, 'a', 0);

    expect(await handOffNewHead(scope, SOURCE_REF, laneOf('a'), next)).toBe('retried');
    expect(scope.written).toEqual([expect.objectContaining({ kind: 'retry', topic: FIRST_TIER, attempt: 1, dueAtMs: T0, deferred: true, origin: { topic: 'orders', partition: 0, offset: 1 } })]);
    // The copy first, the lease off after: a crash between the two leaves the lease to expire and the copy to be re-driven.
    expect(scope.events).toEqual(['write retry 1 deferred', 'advance 1 to 1 retrying']);
    expect(headOf(scope, 'a')).toMatchObject({ offset: 1, attempt: 1, state: 'retrying', dueAtMs: T0, leaseUntilMs: 0 });
    expect(parkedOf(scope, 'a')).toContain(2);
  });

  it('keeps the attempt it is given: a re-driven head goes on at its own attempt', async () => {
    const scope = fakeScope<EngineTask>();
    await blockedLane(scope, 'a', 0, [1]);
    const next = await releasedOnto(scope, 'a', 0, 2);
    await handOffNewHead(scope, SOURCE_REF, laneOf('a'), { ...next, attempt: 2 });
    expect(scope.written).toEqual([expect.objectContaining({ attempt: 2, deferred: true })]);
    expect(headOf(scope, 'a')).toMatchObject({ offset: 1, attempt: 2, state: 'retrying' });
  });

  it('dead-letters a head whose copy the broker refuses for good, and moves the lane on under `release`', async () => {
    const scope = fakeScope<EngineTask>();
    await blockedLane(scope, 'a', 0, [1, 2]);
    const next = await releasedOnto(scope, 'a', 0);
    scope.outcome = REFUSED;

    expect(await handOffNewHead(scope, SOURCE_REF, laneOf('a'), next)).toBe('dead-lettered');
    // Refused again, the next head is dead-lettered in turn; the lane ends free, its parked records all handed on.
    expect(scope.events).toEqual(['write retry 1 deferred', 'release 1', 'write retry 2 deferred', 'release 2']);
    expect(headOf(scope, 'a')).toBeUndefined();
  });

  it('holds the lane on a head whose copy was refused under `hold`, its followers still parked', async () => {
    const scope = fakeScope<EngineTask>({ deadLetter: { policy: 'hold' } });
    await blockedLane(scope, 'a', 0, [1, 2]);
    const next = await releasedOnto(scope, 'a', 0);
    scope.outcome = REFUSED;

    expect(await handOffNewHead(scope, SOURCE_REF, laneOf('a'), next)).toBe('dead-lettered');
    expect(headOf(scope, 'a')).toMatchObject({ offset: 1, attempt: 1, state: 'held', reason: 'too-large', leaseUntilMs: 0 });
    expect(parkedOf(scope, 'a')).toContain(2);
  });
});

describe('applyDeadLetterPolicy', () => {
  it('under `release`, frees the lane onto its next parked record, handed to the first tier due now', async () => {
    const scope = fakeScope<EngineTask>();
    await blockedLane(scope, 'a', 0, [1, 2]);
    await applyDeadLetterPolicy(scope, SOURCE_REF, { lane: laneOf('a'), head: { offset: 0, attempt: 3 } }, REFUSAL);
    expect(scope.events).toEqual(['release 0', 'write retry 1 deferred', 'advance 1 to 1 retrying']);
    expect(scope.written).toEqual([expect.objectContaining({ topic: FIRST_TIER, attempt: 1, dueAtMs: T0, deferred: true })]);
    expect(headOf(scope, 'a')).toMatchObject({ offset: 1, state: 'retrying', leaseUntilMs: 0 });
  });

  it('under `release`, leaves a lane with nothing parked free and writes nothing', async () => {
    const scope = fakeScope<EngineTask>();
    await blockedLane(scope, 'a', 0);
    await applyDeadLetterPolicy(scope, SOURCE_REF, { lane: laneOf('a'), head: { offset: 0, attempt: 3 } }, REFUSAL);
    expect(headOf(scope, 'a')).toBeUndefined();
    expect(scope.written).toEqual([]);
  });

  it('under `hold`, keeps the lane blocked on its head, held with the reason, and writes nothing to the dead-letter topic itself', async () => {
    const scope = fakeScope<EngineTask>({ deadLetter: { policy: 'hold' } });
    await blockedLane(scope, 'a', 0, [1]);
    await applyDeadLetterPolicy(scope, SOURCE_REF, { lane: laneOf('a'), head: { offset: 0, attempt: 3 } }, { reason: 'attempts-exhausted' });
    expect(headOf(scope, 'a')).toMatchObject({ offset: 0, attempt: 3, state: 'held', reason: 'attempts-exhausted', dueAtMs: T0, leaseUntilMs: 0 });
    expect(parkedOf(scope, 'a')).toEqual([1]);
    expect(scope.written.filter((item) => item.topic === DLQ)).toEqual([]);
  });

  it('under `hold`, gives a held head a watch copy while the partition has no marker, and none once it has', async () => {
    const unmarked = fakeScope<EngineTask>({ deadLetter: { policy: 'hold' } }, undefined, { durablyMarked: async () => false });
    await blockedLane(unmarked, 'a', 0);
    await applyDeadLetterPolicy(unmarked, SOURCE_REF, { lane: laneOf('a'), head: { offset: 0, attempt: 3 }, record: record(0, 'a') }, REFUSAL);
    expect(unmarked.written).toEqual([expect.objectContaining({ kind: 'retry', topic: FIRST_TIER, attempt: 3, deferred: true, dueAtMs: T0 + RECOVERY_RECHECK_MS })]);

    const marked = fakeScope<EngineTask>({ deadLetter: { policy: 'hold' } }, undefined, { durablyMarked: async () => true });
    await blockedLane(marked, 'a', 0);
    await applyDeadLetterPolicy(marked, SOURCE_REF, { lane: laneOf('a'), head: { offset: 0, attempt: 3 }, record: record(0, 'a') }, REFUSAL);
    expect(marked.written).toEqual([]);
    expect(headOf(marked, 'a')).toMatchObject({ state: 'held' });
  });
});

describe('watchHeldHead', () => {
  const basis = () => ({ record: record(4, 'a'), origin: { topic: 'orders', partition: 0, offset: 4 }, lane: laneOf('a') });

  it('writes a deferred copy of the head at its attempt, due after the recheck interval, while the partition is unmarked', async () => {
    const scope = fakeScope<EngineTask>({}, undefined, { durablyMarked: async () => false });
    await watchHeldHead(scope, SOURCE_REF, basis(), 2);
    expect(scope.written).toEqual([expect.objectContaining({ kind: 'retry', topic: FIRST_TIER, attempt: 2, deferred: true, dueAtMs: T0 + RECOVERY_RECHECK_MS, origin: { topic: 'orders', partition: 0, offset: 4 } })]);
  });

  it('writes nothing once the partition is marked, nor on a store that has no first minute to watch', async () => {
    const marked = fakeScope<EngineTask>({}, undefined, { durablyMarked: async () => true });
    await watchHeldHead(marked, SOURCE_REF, basis(), 2);
    expect(marked.written).toEqual([]);

    const model = fakeScope<EngineTask>();
    await watchHeldHead(model, SOURCE_REF, basis(), 2);
    expect(model.written).toEqual([]);
  });
});
