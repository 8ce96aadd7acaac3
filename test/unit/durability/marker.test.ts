import type { PartitionAudit } from '../../../src/ports/partition';
import { findLoss, LossReason, OVERDUE_HEAD_MS } from '../../../src/durability/loss';
import { recoveryStart } from '../../../src/durability/first-minute';
import { decodeMarker, encodeMarker } from '../../../src/durability/marker';

/** A whole state: counters agree with the data, stamped with generation `a1`. */
function audit(overrides: Partial<PartitionAudit> = {}): PartitionAudit {
  return {
    present: true, base: 0, highest: 19, generation: 'a1', parked: 6, parkedInLists: 6, lanes: 1, openLanes: 1,
    lowestHead: 0, recoveringUntil: undefined, recoveries: 0, lossReported: undefined, ...overrides,
  };
}

const MARKED = { committed: 0, marker: { generation: 'a1', highest: 19 } };
const NOW = 1_000_000;

describe('the durable marker', () => {
  it('encodes and decodes generation and highest admitted offset', () => {
    expect(encodeMarker({ generation: '8c1f0a2b3c4d', highest: 41 })).toBe('kl1:8c1f0a2b3c4d:41');
    expect(decodeMarker('kl1:8c1f0a2b3c4d:41')).toEqual({ generation: '8c1f0a2b3c4d', highest: 41 });
  });

  it('encodes and decodes the lowest offset the commits vouch for, when known', () => {
    expect(encodeMarker({ generation: 'ab', highest: 41, since: 10 })).toBe('kl1:ab:41:10');
    expect(decodeMarker('kl1:ab:41:10')).toEqual({ generation: 'ab', highest: 41, since: 10 });
  });

  it.each([undefined, null, '', 'someone else', 'kl1:XYZ:4', 'kl1:ab:x', 'kl1:ab:4:5:6', 'kl1:ab:4:', 'kl1:ab:4:-1', 'kl2:ab:4'])('reads no marker in %j', (metadata) => {
    expect(decodeMarker(metadata)).toBeUndefined();
  });
});

describe('findLoss', () => {
  it('finds nothing in a whole state that matches the marker, nor in a new partition without one', () => {
    expect(findLoss({ audit: audit(), frontier: 20, durable: MARKED, nowMs: NOW })).toBeUndefined();
    expect(findLoss({ audit: audit({ present: false, generation: undefined }), frontier: undefined, durable: { committed: undefined, marker: undefined }, nowMs: NOW })).toBeUndefined();
  });

  it.each<[string, Partial<PartitionAudit>, number | undefined, LossReason]>([
    ['no state while the group has a marker', { present: false, generation: undefined, highest: undefined }, undefined, LossReason.StateMissing],
    ['a state made again since (no generation)', { generation: undefined }, 20, LossReason.YoungerState],
    ['another generation', { generation: 'b2' }, 20, LossReason.YoungerState],
    ['a highest admitted offset below the marker\'s', { highest: 9 }, 10, LossReason.OlderState],
    ['a parked count the park lists disagree with', { parkedInLists: 0 }, 20, LossReason.ParkListsLost],
    ['fewer lanes than blocked and not freed', { lanes: 0, lowestHead: undefined }, 20, LossReason.LanesLost],
    ['a report by a retry copy', { lossReported: NOW - 5 }, 20, LossReason.Reported],
  ])('finds %s', (_, overrides, frontier, reason) => {
    expect(findLoss({ audit: audit(overrides), frontier, durable: MARKED, nowMs: NOW })?.reason).toBe(reason);
  });

  it('finds done bits lost: a frontier below the committed offset', () => {
    expect(findLoss({ audit: audit(), frontier: 3, durable: { ...MARKED, committed: 5 }, nowMs: NOW })?.reason).toBe(LossReason.DoneBitsLost);
  });

  // Found by the randomized histories: a snapshot restored from before a head's retry ran left its lane blocked on
  // it, with the frontier, highest and generation all matching the marker, and the copy consumed: the lane waited for ever.
  // Found by the randomized histories: the writes of a copy's successful run (its lane's release) lost, the copy
  // consumed; the lane stayed blocked on a head that nothing would run again.
  it('finds a retrying head long overdue, and not one merely late', () => {
    expect(findLoss({ audit: audit({ oldestDueAtMs: NOW - OVERDUE_HEAD_MS - 1 }), frontier: 20, durable: MARKED, nowMs: NOW })?.reason).toBe(LossReason.HeadOverdue);
    expect(findLoss({ audit: audit({ oldestDueAtMs: NOW - OVERDUE_HEAD_MS }), frontier: 20, durable: MARKED, nowMs: NOW })).toBeUndefined();
  });

  // Found by the randomized histories: a run's done bit lost after the event source moved past its record (and the
  // window cap refusing the next one): the frontier would wait on it for ever, not even reported as stalled.
  it('finds done bits lost below where the event source committed, and nothing at or above it', () => {
    expect(findLoss({ audit: audit(), frontier: 14, durable: MARKED, nowMs: NOW, delivered: 15 })?.reason).toBe(LossReason.PassedNotDone);
    expect(findLoss({ audit: audit(), frontier: 15, durable: MARKED, nowMs: NOW, delivered: 15 })).toBeUndefined();
    // Not known (no event source offsets given): nothing judged.
    expect(findLoss({ audit: audit(), frontier: 14, durable: MARKED, nowMs: NOW })).toBeUndefined();
  });

  it('finds an older state: a lane head below the committed offset', () => {
    expect(findLoss({ audit: audit({ lowestHead: 4 }), frontier: 6, durable: { ...MARKED, committed: 5 }, nowMs: NOW })?.reason).toBe(LossReason.HeadBelowCommitted);
    expect(findLoss({ audit: audit({ lowestHead: 5 }), frontier: 6, durable: { ...MARKED, committed: 5 }, nowMs: NOW })).toBeUndefined();
  });

  it('leaves a partition alone while a recovery rebuilds it, and judges it again once the fence expired', () => {
    expect(findLoss({ audit: audit({ present: false, recoveringUntil: NOW + 1 }), frontier: undefined, durable: MARKED, nowMs: NOW })).toBeUndefined();
    expect(findLoss({ audit: audit({ present: false, recoveringUntil: NOW - 1 }), frontier: undefined, durable: MARKED, nowMs: NOW })?.reason).toBe(LossReason.StateMissing);
  });
});

describe('recoveryStart', () => {
  const FIRST = { committed: 20, marker: { generation: 'a1', highest: 19, since: 10 } };

  it('starts at the durable frontier, the rebuilt state vouching for what the marker vouches for', () => {
    expect(recoveryStart(FIRST, undefined)).toEqual({ from: 20, since: 10 });
    expect(recoveryStart({ committed: undefined, marker: undefined }, 3)).toEqual({ from: undefined, since: undefined });
  });

  // The "first minute": a state lost before the committer's first commit, a later batch made a state born at 10,
  // and the first commit (no marker to check against) passed the lost records; a copy of one of them reports 3.
  it('moves back to a reported origin below where the commits vouch from', () => {
    expect(recoveryStart(FIRST, 3)).toEqual({ from: 3, rewindTo: 3, since: 3 });
  });

  it('never moves back for a copy the commits vouch for: it is terminal (no recovery storm)', () => {
    expect(recoveryStart(FIRST, 10)).toEqual({ from: 20, since: 10 });
    expect(recoveryStart(FIRST, 25)).toEqual({ from: 20, since: 10 });
  });

  it('takes commits of an older version, without `since`, as vouching for every offset below them', () => {
    expect(recoveryStart({ committed: 20, marker: { generation: 'a1', highest: 19 } }, 3)).toEqual({ from: 20, since: 0 });
  });
});
