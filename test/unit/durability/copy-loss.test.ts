import type { PartitionAudit } from '../../../src/ports/partition';
import { findCopyLoss, LossReason, suspectLoss } from '../../../src/durability/loss';

const NOW = 1_750_000_000_000;
/** A whole state: born at 10, admitted up to 50, its counts agreeing with its data. */
const WHOLE: PartitionAudit = {
  present: true, base: 10, highest: 50, born: 10, generation: 'a1', parked: 2, parkedInLists: 2, lanes: 1, openLanes: 1,
  lowestHead: 20, recoveringUntil: undefined, recoveries: 0,
};

describe('the loss judge, asked by a retry copy whose lane is free', () => {
  it.each([
    ['no state', { ...WHOLE, present: false }, 30, undefined, LossReason.StateMissing],
    ['an origin below where the state was born', WHOLE, 3, undefined, LossReason.BornAfterOrigin],
    ['an origin above the highest admitted', WHOLE, 51, undefined, LossReason.OriginUnknown],
    ['a park list lost', { ...WHOLE, parkedInLists: 1 }, 30, true, LossReason.ParkListsLost],
    ['a lane entry lost', { ...WHOLE, lanes: 0 }, 30, true, LossReason.LanesLost],
    ['its origin not done', WHOLE, 30, false, LossReason.OriginNotDone],
    ['a recovery under way', { ...WHOLE, recoveringUntil: NOW + 1 }, 30, true, LossReason.Recovering],
  ] as const)('finds %s', (_, audit, origin, originDone, reason) => {
    expect(findCopyLoss({ audit, origin, originDone, nowMs: NOW })?.reason).toBe(reason);
  });

  it('finds its lane head behind the copy: the state is older than the copy', () => {
    expect(findCopyLoss({ audit: WHOLE, origin: 30, originDone: true, nowMs: NOW, headBehind: { offset: 20, attempt: 3, failedSinceDue: false } })?.reason).toBe(LossReason.HeadBehindOrigin);
    // Recovered: the copy's record first failed since its head was due, so the copy is not from before the rebuild.
    expect(findCopyLoss({ audit: { ...WHOLE, recoveries: 1 }, origin: 30, originDone: true, nowMs: NOW, headBehind: { offset: 20, attempt: 3, failedSinceDue: true } })?.reason).toBe(LossReason.HeadBehindOrigin);
  });

  it('takes a copy behind its head in a recovered partition, from before the rebuild, for stale', () => {
    expect(findCopyLoss({ audit: { ...WHOLE, recoveries: 1 }, origin: 30, originDone: true, nowMs: NOW, headBehind: { offset: 20, attempt: 3, failedSinceDue: false } })).toBeUndefined();
  });

  it('finds nothing when the origin is done in a whole state: the copy is stale', () => {
    expect(findCopyLoss({ audit: WHOLE, origin: 30, originDone: true, nowMs: NOW })).toBeUndefined();
    expect(findCopyLoss({ audit: { ...WHOLE, recoveringUntil: NOW - 1 }, origin: 30, originDone: true, nowMs: NOW })).toBeUndefined();
  });

  it('reports what it finds, except a recovery under way, and nothing when the state is whole', async () => {
    const reported: number[] = [];
    const store = (audit: PartitionAudit, originDone: boolean | undefined) => ({
      originState: async () => ({ audit, originDone }),
      reportLoss: async (_ref: unknown, origin: number) => void reported.push(origin),
    });
    const ref = { group: 'g', topic: 'orders', partition: 0 };
    await suspectLoss(store(WHOLE, false), ref, { origin: 30, nowMs: NOW });
    await suspectLoss(store({ ...WHOLE, recoveringUntil: NOW + 1 }, true), ref, { origin: 31, nowMs: NOW });
    await suspectLoss(store(WHOLE, true), ref, { origin: 32, nowMs: NOW });
    expect(reported).toEqual([30]);
    expect(await suspectLoss({}, ref, { origin: 33, nowMs: NOW })).toBeUndefined();
  });

  it('tells whether its report is news: no loss reported yet, or only from a higher origin', async () => {
    const ref = { group: 'g', topic: 'orders', partition: 0 };
    const store = (audit: PartitionAudit) => ({ originState: async () => ({ audit, originDone: false }), reportLoss: async () => undefined });
    expect((await suspectLoss(store(WHOLE), ref, { origin: 30, nowMs: NOW }))?.firstReport).toBe(true);
    expect((await suspectLoss(store({ ...WHOLE, lossReported: NOW - 1, lossReportedFrom: 40 }), ref, { origin: 30, nowMs: NOW }))?.firstReport).toBe(true);
    expect((await suspectLoss(store({ ...WHOLE, lossReported: NOW - 1, lossReportedFrom: 30 }), ref, { origin: 30, nowMs: NOW }))?.firstReport).toBe(false);
    expect((await suspectLoss(store({ ...WHOLE, lossReported: NOW - 1, lossReportedFrom: 20 }), ref, { origin: 30, nowMs: NOW }))?.firstReport).toBe(false);
    expect((await suspectLoss(store({ ...WHOLE, recoveringUntil: NOW + 1 }), ref, { origin: 30, nowMs: NOW }))?.firstReport).toBe(false);
  });
});
